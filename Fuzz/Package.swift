// swift-tools-version: 6.0
import PackageDescription

// libFuzzer harnesses, one per decoder of untrusted bytes, and one for the router as a whole. Built only by scripts/fuzz:
//   swift build --package-path Fuzz --sanitize=fuzzer --sanitize=address
// Each entry point has no `main`; libFuzzer provides it at link time.
let fuzzers = [
    "fuzz-packet", "fuzz-announce", "fuzz-fragment", "fuzz-file-transfer",
    "fuzz-request-sync", "fuzz-noise-payload", "fuzz-reassembler", "fuzz-noise-session", "fuzz-state", "fuzz-wifiset", "fuzz-router", "fuzz-yaok", "fuzz-yaok-server", "fuzz-bulk", "fuzz-ios-reencode",
]

let package = Package(
    name: "StarlingFuzz",
    dependencies: [.package(name: "Starling", path: "..")],
    targets: fuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: [
                .product(name: "StarlingWire", package: "Starling"),
                .product(name: "StarlingCrypto", package: "Starling"),
                .product(name: "StarlingMesh", package: "Starling"),
                .product(name: "StarlingStately", package: "Starling"),
                .product(name: "StarlingWiFiSet", package: "Starling"),
                .product(name: "StarlingSim", package: "Starling"),
                .product(name: "StarlingYaOK", package: "Starling"),
                .product(name: "StarlingYaOKServerCore", package: "Starling"),
                .product(name: "StarlingBulk", package: "Starling"),
            ]
        )
    },
    swiftLanguageModes: [.v6]
)
