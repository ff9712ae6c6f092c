// swift-tools-version: 6.0
import PackageDescription

// Layers point one way: StarlingWire (bytes only) ← crypto ← mesh ← services.
// The command line and the benchmarks compose them.

var targets: [Target] = [
    // Debian's zlib, for raw DEFLATE (RFC 1951) of compressed bitchat payloads.
    .systemLibrary(
        name: "CZlib",
        pkgConfig: "zlib",
        providers: [.apt(["zlib1g-dev"])]
    ),
    // The bitchat wire format: bytes in, values out. No I/O, no keys.
    .target(
        name: "StarlingWire",
        dependencies: [
            "CZlib",
            .product(name: "Crypto", package: "swift-crypto"),
        ]
    ),
    .executableTarget(
        name: "starling",
        dependencies: [
            "StarlingWire",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]
    ),
    .executableTarget(
        name: "starling-bench",
        dependencies: ["StarlingWire"]
    ),
    .testTarget(
        name: "StarlingWireTests",
        dependencies: [
            "StarlingWire",
            .product(name: "Crypto", package: "swift-crypto"),
        ],
        resources: [.copy("Regressions"), .copy("gcs_vectors.json")]
    ),
]

// libFuzzer harnesses, one per decoder, built only by scripts/fuzz (STARLING_FUZZ=1
// and --sanitize=fuzzer): an entry point without `main` links only against libFuzzer.
let fuzzers = [
    "fuzz-packet", "fuzz-announce", "fuzz-fragment", "fuzz-file-transfer",
    "fuzz-request-sync", "fuzz-noise-payload", "fuzz-reassembler",
]
if Context.environment["STARLING_FUZZ"] != nil {
    for name in fuzzers {
        targets.append(.executableTarget(name: name, dependencies: ["StarlingWire"], path: "Fuzz/\(name)"))
    }
}

let package = Package(
    name: "Starling",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "StarlingWire", targets: ["StarlingWire"]),
        .executable(name: "starling", targets: ["starling"]),
        .executable(name: "starling-bench", targets: ["starling-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
