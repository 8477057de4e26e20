# Container image of the operator. Not built in CI here (no container engine on the CI machine);
# the runtime tree it copies is checked by tests/local/test_runtime_image.py, which runs the
# collected binary in a chroot as user 65532.
#
#   docker build -t tfjob-operator:latest .      (or: podman build, buildah bud)
#
# Stage 1 builds with Debian's packages, as scripts/install-deps does on a developer machine.
FROM debian:bookworm AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake ninja-build pkg-config binutils \
      libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-dev \
      libcli11-dev libcpp-httplib-dev ca-certificates git \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTFJOB_BUILD_TESTS=OFF -DTFJOB_BUILD_BENCH=OFF \
 && cmake --build /build --target tfjob_main \
 && scripts/collect-runtime /build/tfjob /rootfs

# Stage 2: nothing but the binary, the shared libraries it loads, a passwd entry and CA bundle.
FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tfjob"]
CMD ["operator"]
