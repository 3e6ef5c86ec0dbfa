# Builds both binaries: the app (web) and the stand-alone demo MCP server.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/web ./cmd/web \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/demo-mcp ./cmd/demo-mcp

FROM debian:bookworm-slim
# tini is the container's first process: it reaps what local servers leave
# behind, and when Rounds ends, however it ends, the container ends with
# every process in it (docs/servers.md, local servers).
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates tini && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/web /out/demo-mcp /usr/local/bin/
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/web"]
