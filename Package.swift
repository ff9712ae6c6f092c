// swift-tools-version: 6.0
import PackageDescription

// Layers point one way: StarlingWire (bytes only) ← crypto ← mesh ← services.
// The command line and the benchmarks compose them.

let targets: [Target] = [
    // Debian's zlib, for raw DEFLATE (RFC 1951) of compressed bitchat payloads.
    .systemLibrary(
        name: "CZlib",
        pkgConfig: "zlib",
        providers: [.apt(["zlib1g-dev"])]
    ),
    // Debian's libdbus-1, for BlueZ (Bluetooth on Linux) over D-Bus.
    .systemLibrary(
        name: "CDBus",
        pkgConfig: "dbus-1",
        providers: [.apt(["libdbus-1-dev"])]
    ),
    // A small, safe Swift layer over libdbus: values, calls, signals, exported
    // objects; one dispatch thread per connection, async calls.
    .target(
        name: "StarlingDBus",
        dependencies: ["CDBus"]
    ),
    // BlueZ over D-Bus, both roles: GATT peripheral, advertisement, central.
    .target(
        name: "StarlingBlueZ",
        dependencies: ["StarlingDBus", .product(name: "Logging", package: "swift-log")]
    ),
    // Bluetooth LE as a transport (and WiFiSet over BLE): its own product, so
    // that an app embeds a node without libdbus.
    .target(
        name: "StarlingBluetooth",
        dependencies: ["StarlingBlueZ", "StarlingDBus", "StarlingTransport", "StarlingWiFiSet", "StarlingWire",
                       .product(name: "Logging", package: "swift-log")]
    ),
    // The bitchat wire format: bytes in, values out. No I/O, no keys.
    .target(
        name: "StarlingWire",
        dependencies: [
            "CZlib",
            .product(name: "Crypto", package: "swift-crypto"),
        ]
    ),
    // Noise (any pattern), bitchat sessions, identity and signing. Knows bytes and
    // keys; no sockets, no files except the key file it is handed.
    .target(
        name: "StarlingCrypto",
        dependencies: [
            "StarlingWire",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "CryptoExtras", package: "swift-crypto"),
        ]
    ),
    // The mesh router without I/O: dedup, TTL, relay policies, jittered relays
    // with cancellation, fragmentation in the path, statistics.
    .target(
        name: "StarlingMesh",
        dependencies: [
            "StarlingWire",
            .product(name: "HeapModule", package: "swift-collections"),
        ]
    ),
    // Stately (seed 000): encrypted status broadcasting, SOS and power modes, as a
    // state machine without I/O over the same links as the router.
    .target(
        name: "StarlingStately",
        dependencies: ["StarlingWire", "StarlingCrypto", "StarlingMesh"]
    ),
    // WiFiSet (seed 003): provisioning a device's Wi-Fi over BLE — the device's
    // state machine (no I/O), the phone's async SDK, GATT-like links.
    .target(
        name: "StarlingWiFiSet",
        dependencies: ["StarlingWire", "StarlingCrypto"]
    ),
    // Ya OK (seed 002) without I/O: contact cards and safety numbers, the messenger's records, sealed
    // store-and-forward messages, message states and retries, incidents.
    .target(
        name: "StarlingYaOK",
        dependencies: ["StarlingWire", "StarlingCrypto", .product(name: "Crypto", package: "swift-crypto")]
    ),
    // Debian's libsecp256k1 (with its extrakeys, schnorrsig and ecdh modules).
    .systemLibrary(name: "CSecp256k1", pkgConfig: "libsecp256k1", providers: [.apt(["libsecp256k1-dev"])]),
    // Nostr (seed 004 §15): BIP-340 keys and signatures, NIP-44 v2, events.
    .target(
        name: "StarlingNostr",
        dependencies: ["CSecp256k1", "StarlingCrypto", "StarlingWire", "StarlingMesh", .product(name: "Crypto", package: "swift-crypto")]
    ),
    // Nostr as a mailbox transport: relays over WebSockets through a SOCKS5
    // proxy (Tor), fail-closed.
    .target(
        name: "StarlingNostrTransport",
        dependencies: ["StarlingNostr", "StarlingTransport", "StarlingWire", "StarlingMesh",
                       .product(name: "WSClient", package: "swift-websocket"),
                       .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                       .product(name: "Logging", package: "swift-log")]
    ),
    // Ya OK's relay (seed 002 §4.3, §6.3) without I/O: the server's and the
    // client's protocol cores, the queue store's interface, a store in memory.
    .target(
        name: "StarlingYaOKServerCore",
        dependencies: ["StarlingWire", .product(name: "Crypto", package: "swift-crypto")]
    ),
    // The relay server's runtime: the UDP socket, group commits, its SQLite store.
    .target(
        name: "StarlingYaOKServer",
        dependencies: ["StarlingYaOKServerCore", "StarlingWire", "StarlingTransport", .product(name: "GRDB", package: "GRDB.swift"),
                       .product(name: "GRDBSQLite", package: "GRDB.swift")]
    ),
    // The relay's queues in PostgreSQL (postgres-nio): several servers, one population.
    .target(
        name: "StarlingYaOKServerPostgres",
        dependencies: ["StarlingYaOKServerCore", "StarlingWire", .product(name: "PostgresNIO", package: "postgres-nio"),
                       .product(name: "Logging", package: "swift-log")]
    ),
    // The relay client's runtime (a transport beside UDP and BlueZ): its socket and clock.
    .target(
        name: "StarlingYaOKClient",
        dependencies: ["StarlingYaOKServerCore", "StarlingYaOK", "StarlingCrypto", "StarlingWire", "StarlingTransport",
                       .product(name: "Crypto", package: "swift-crypto")]
    ),
    // The messenger's encrypted store on SQLite (GRDB; seed 002's store): per-value encryption, the
    // keyring (PIN, passphrase or key file) with its lockout, backups.
    .target(
        name: "StarlingStore",
        dependencies: ["StarlingYaOK", "StarlingCrypto", "StarlingWire",
                       .product(name: "GRDB", package: "GRDB.swift"),
                       .product(name: "Crypto", package: "swift-crypto"),
                       .product(name: "CryptoExtras", package: "swift-crypto")]
    ),
    // Debian's libqrencode (make QR codes), libzbar (read them) and libpng.
    .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
    .systemLibrary(name: "CZbar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
    .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
    // The chat client's terminal input without I/O: keys from bytes (escape
    // sequences, UTF-8, bracketed paste) and the line editor.
    .target(name: "StarlingTerminal"),
    // Debian's ncursesw, for the full-screen chat.
    // (No pkg-config: ncursesw's only adds -D flags SwiftPM refuses, with a warning on every
    // build; the module map links the libraries and the shim defines NCURSES_WIDECHAR.)
    .systemLibrary(name: "CNcurses", providers: [.apt(["libncurses-dev"])]),
    // QR codes: made, drawn in a terminal, written and read as PNG.
    .target(
        name: "StarlingQR",
        dependencies: ["CQRencode", "CZbar", "CPNG"]
    ),
    // The discrete-event mesh simulator: the same router over a simulated radio.
    .target(
        name: "StarlingSim",
        dependencies: [
            "StarlingWire",
            "StarlingMesh",
            "StarlingStately",
            .product(name: "HeapModule", package: "swift-collections"),
        ]
    ),
    // Large files over the LAN (Ya OK seed 002 §4.2, bitchat's wifiBulk):
    // the offer's sealing and the two ends' state machines, without I/O…
    .target(
        name: "StarlingBulk",
        dependencies: ["StarlingWire", .product(name: "Crypto", package: "swift-crypto")]
    ),
    // Wi-Fi Direct groups through wpa_supplicant's D-Bus API, for two machines with no common network.
    .target(
        name: "StarlingWiFiDirect",
        dependencies: ["StarlingDBus"]
    ),
    // …and over TCP (SwiftNIO): the sender's listener, the receiver's resumable download.
    .target(
        name: "StarlingBulkTransport",
        dependencies: ["StarlingBulk", "StarlingWire", .product(name: "Crypto", package: "swift-crypto"),
                       .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                       .product(name: "NIOExtras", package: "swift-nio-extras")]
    ),
    // The transport interface, and the transports without D-Bus: UDP
    // (loopback discovery, LAN), an in-memory hub.
    .target(
        name: "StarlingTransport",
        dependencies: ["StarlingWire"]
    ),
    // A bitchat node without I/O: router, sessions, announces, delivery,
    // favourites, blocks, files, Stately.
    .target(
        name: "StarlingNodeCore",
        dependencies: ["StarlingWire", "StarlingCrypto", "StarlingMesh", "StarlingStately", "StarlingNostr",
                       .product(name: "HeapModule", package: "swift-collections")]
    ),
    // Many node cores in one process on a virtual clock (tests, simulations,
    // benchmarks): the same code as a real node, driven by hand.
    .target(
        name: "StarlingEmbeddedNetwork",
        dependencies: ["StarlingNodeCore", "StarlingWire", "StarlingCrypto", "StarlingMesh",
                       .product(name: "HeapModule", package: "swift-collections")]
    ),
    // The node runtime: a node core over transports, the clock and the files.
    .target(
        name: "StarlingNode",
        dependencies: ["StarlingNodeCore", "StarlingWire", "StarlingCrypto", "StarlingMesh", "StarlingStately", "StarlingWiFiSet",
                       "StarlingTransport", "StarlingBulk", "StarlingBulkTransport", .product(name: "Logging", package: "swift-log")]
    ),
    // The messenger's core: contacts, conversations, routes, receipts, trust and
    // strangers' requests as a value without I/O (MessengerCore) and the events
    // it gives its faces. No store, no sockets: an app or a test uses it alone.
    .target(
        name: "StarlingMessengerCore",
        dependencies: ["StarlingNodeCore", "StarlingWire", "StarlingCrypto", "StarlingMesh", "StarlingYaOK", "StarlingNostr"]
    ),
    // The messenger's runtime over a node, the encrypted store and the mailboxes
    // (Messenger). Every face is a client of it (MessengerClient).
    .target(
        name: "StarlingMessenger",
        dependencies: ["StarlingMessengerCore", "StarlingNodeCore", "StarlingNode", "StarlingWire", "StarlingCrypto", "StarlingMesh", "StarlingYaOK", "StarlingStately",
                       "StarlingStore", "StarlingTransport", "StarlingYaOKClient", "StarlingNostr", "StarlingNostrTransport"]
    ),
    // The browser's face (`starling web`): plain HTML, CSS and JavaScript the daemon serves.
    .target(
        name: "StarlingWebClient",
        resources: [.copy("Resources")]
    ),
    // The API's contract: its objects and events as plain Codable values, no
    // I/O and no dependency (what an app that talks to a daemon imports).
    .target(name: "StarlingAPIContract"),
    // The messenger's local API (the daemon's): versioned JSON over HTTP on
    // 127.0.0.1 and a Unix socket, a bearer token, a resumable event stream;
    // and the client the command line uses to reach a running daemon.
    .target(
        name: "StarlingMessengerAPI",
        dependencies: ["StarlingAPIContract", "StarlingMessenger", "StarlingMessengerCore", "StarlingNode", "StarlingNodeCore", "StarlingBulkTransport", "StarlingWire", "StarlingCrypto", "StarlingYaOK",
                       "StarlingStore", "StarlingStately", "StarlingNostrTransport", "StarlingQR",
                       .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
                       .product(name: "AsyncHTTPClient", package: "async-http-client"),
                       .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                       .product(name: "HTTPTypes", package: "swift-http-types"),
                       .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                       .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "Logging", package: "swift-log")]
    ),
    // What an app imports: wire, crypto, mesh, node core and runtime, UDP.
    .target(
        name: "Starling",
        dependencies: ["StarlingWire", "StarlingCrypto", "StarlingMesh", "StarlingStately", "StarlingNodeCore", "StarlingNode",
                       "StarlingTransport"]
    ),
    .executableTarget(
        name: "starling",
        dependencies: [
            "StarlingWebClient",
            "StarlingWire",
            "StarlingCrypto",
            "StarlingNode",
            "StarlingMesh",
            "StarlingSim",
            "StarlingStately",
            "StarlingWiFiSet",
            "StarlingTransport",
            "StarlingBluetooth",
            "StarlingYaOK",
            "StarlingStore",
            "StarlingYaOKServerCore",
            "StarlingYaOKServer",
            "StarlingYaOKClient",
            "StarlingYaOKServerPostgres",
            "StarlingNostr",
            "StarlingNostrTransport",
            "StarlingMessenger", "StarlingMessengerCore",
            "StarlingMessengerAPI",
            "StarlingAPIContract",
            "StarlingEmbeddedNetwork",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            "StarlingQR",
            "StarlingTerminal",
            "CNcurses",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]
    ),
    .executableTarget(
        name: "starling-bench",
        dependencies: [
            "StarlingMessenger", "StarlingMessengerCore",
            "StarlingMessengerAPI",
            "StarlingAPIContract",
            .product(name: "Logging", package: "swift-log"),
            "StarlingYaOKServerCore",
            "StarlingYaOKServer",
            "StarlingYaOKServerPostgres",
            "StarlingWire",
            "StarlingCrypto",
            "StarlingMesh",
            "StarlingSim",
            "StarlingStately",
            "StarlingNode",
            "StarlingEmbeddedNetwork",
            "StarlingBulk",
            "StarlingBulkTransport",
            "StarlingTransport",
            "StarlingYaOK",
            "StarlingStore",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "CryptoExtras", package: "swift-crypto"),
            .product(name: "GRDB", package: "GRDB.swift"),
        ]
    ),
    .testTarget(
        name: "StarlingWireTests",
        dependencies: [
            "StarlingWire", "StarlingTestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
        ],
        resources: [.copy("Regressions"), .copy("gcs_vectors.json"), .copy("ios_compression_vectors.json")]
    ),
    .testTarget(
        name: "StarlingCryptoTests",
        dependencies: [
            "StarlingCrypto", "StarlingTestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "CryptoExtras", package: "swift-crypto"),
        ],
        resources: [.copy("Vectors")]
    ),
    .testTarget(
        name: "StarlingMeshTests",
        dependencies: ["StarlingMesh", "StarlingSim", "StarlingWire", "StarlingTestSupport"]
    ),
    .testTarget(
        name: "StarlingTransportTests",
        dependencies: ["StarlingTransport", "StarlingWire"]
    ),
    .testTarget(
        name: "StarlingStatelyTests",
        dependencies: ["StarlingStately", "StarlingSim", "StarlingMesh", "StarlingCrypto", "StarlingWire", "StarlingTestSupport"]
    ),
    .testTarget(
        name: "StarlingWiFiSetTests",
        dependencies: ["StarlingWiFiSet", "StarlingCrypto", "StarlingWire"]
    ),
    .testTarget(
        name: "StarlingYaOKTests",
        dependencies: ["StarlingYaOK", "StarlingStore", "StarlingQR", "StarlingCrypto", "StarlingWire",
                       .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift")]
    ),
    .testTarget(name: "StarlingTerminalTests", dependencies: ["StarlingTerminal"]),
    .testTarget(
        name: "StarlingBulkTests",
        dependencies: ["StarlingBulk", "StarlingBulkTransport", "StarlingWire", "StarlingTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                       .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]
    ),
    .testTarget(
        name: "StarlingNostrTests",
        dependencies: ["StarlingNostr", "StarlingTestSupport", "StarlingCrypto", "StarlingWire", "StarlingMesh", .product(name: "Crypto", package: "swift-crypto")],
        resources: [.copy("Vectors")]
    ),
    .testTarget(
        name: "StarlingYaOKServerTests",
        dependencies: ["StarlingYaOKServerCore", "StarlingYaOKServer", "StarlingYaOKClient", "StarlingYaOKServerPostgres", "StarlingYaOK", "StarlingCrypto",
                       "StarlingTestSupport",
                       "StarlingWire", "StarlingTransport", .product(name: "Crypto", package: "swift-crypto"),
                       .product(name: "GRDB", package: "GRDB.swift"), .product(name: "PostgresNIO", package: "postgres-nio")]
    ),
    // Test helpers shared by test targets: the starling binary run and read,
    // the Python environment, a bound on processes at once; a private D-Bus
    // daemon, bluezoo on it; Ya OK clients under a server's failover; a Ya OK
    // store held to the reference store.
    .target(
        name: "StarlingTestSupport",
        dependencies: ["StarlingDBus", "StarlingBlueZ", "StarlingYaOKClient", "StarlingYaOK", "StarlingYaOKServerCore", "StarlingCrypto",
                       "StarlingWire", "StarlingTransport", "StarlingMesh"],
        path: "Tests/StarlingTestSupport"
    ),
    .testTarget(
        name: "StarlingDBusTests",
        dependencies: ["StarlingDBus", "StarlingBlueZ", "StarlingWiFiDirect", "StarlingTestSupport"]
    ),
    .testTarget(
        name: "StarlingMessengerTests",
        dependencies: ["StarlingMessenger", "StarlingMessengerCore", "StarlingBulkTransport", "StarlingNodeCore", "StarlingEmbeddedNetwork", "StarlingCrypto", "StarlingMesh", "StarlingWire", "StarlingYaOK",
                       "StarlingStore", "StarlingNostr", "StarlingMessengerAPI", "StarlingAPIContract", "StarlingNode", "StarlingStately", "StarlingQR", "StarlingTestSupport",
                       .product(name: "Logging", package: "swift-log")]
    ),
    .testTarget(
        name: "StarlingNodeTests",
        dependencies: ["Starling", "StarlingNode", "StarlingNodeCore", "StarlingEmbeddedNetwork", "StarlingCrypto", "StarlingMesh", "StarlingStately",
                       "StarlingTransport", "StarlingWire", "StarlingNostr", "StarlingTestSupport", .product(name: "Crypto", package: "swift-crypto")]
    ),
    // Runs the built `starling` binary as a user would.
    .testTarget(
        name: "StarlingCLITests",
        dependencies: ["starling", "StarlingTestSupport", "StarlingDBus", "StarlingBlueZ", "StarlingCrypto", "StarlingWire", "StarlingMessengerAPI", "StarlingAPIContract",
                       "StarlingYaOK", "StarlingYaOKServerCore", "StarlingYaOKServer", "StarlingYaOKServerPostgres", "StarlingYaOKClient", "StarlingTransport", "StarlingNostr",
                       .product(name: "Crypto", package: "swift-crypto")]
    ),
]

let package = Package(
    name: "Starling",
    platforms: [.macOS(.v14)],
    products: [
        // An app embeds a node with this one (no D-Bus); Bluetooth LE is its own product.
        .library(name: "Starling", targets: ["Starling"]),
        .library(name: "StarlingBluetooth", targets: ["StarlingBluetooth"]),
        .library(name: "StarlingNodeCore", targets: ["StarlingNodeCore"]),
        .library(name: "StarlingMessengerCore", targets: ["StarlingMessengerCore"]),
        .library(name: "StarlingMessenger", targets: ["StarlingMessenger"]),
        .library(name: "StarlingMessengerAPI", targets: ["StarlingMessengerAPI"]),
        .library(name: "StarlingAPIContract", targets: ["StarlingAPIContract"]),
        .library(name: "StarlingNode", targets: ["StarlingNode"]),
        .library(name: "StarlingTransport", targets: ["StarlingTransport"]),
        .library(name: "StarlingBulk", targets: ["StarlingBulk"]),
        .library(name: "StarlingBulkTransport", targets: ["StarlingBulkTransport"]),
        .library(name: "StarlingWire", targets: ["StarlingWire"]),
        .library(name: "StarlingCrypto", targets: ["StarlingCrypto"]),
        .library(name: "StarlingMesh", targets: ["StarlingMesh"]),
        .library(name: "StarlingSim", targets: ["StarlingSim"]),
        .library(name: "StarlingStately", targets: ["StarlingStately"]),
        .library(name: "StarlingWiFiSet", targets: ["StarlingWiFiSet"]),
        // Ya OK: contacts, safety numbers, sealed messages; its store and QR codes.
        .library(name: "StarlingYaOK", targets: ["StarlingYaOK"]),
        .library(name: "StarlingStore", targets: ["StarlingStore"]),
        .library(name: "StarlingQR", targets: ["StarlingQR"]),
        .library(name: "StarlingYaOKServerCore", targets: ["StarlingYaOKServerCore"]),
        .library(name: "StarlingYaOKServer", targets: ["StarlingYaOKServer"]),
        .library(name: "StarlingYaOKClient", targets: ["StarlingYaOKClient"]),
        .library(name: "StarlingYaOKServerPostgres", targets: ["StarlingYaOKServerPostgres"]),
        .library(name: "StarlingNostr", targets: ["StarlingNostr"]),
        .library(name: "StarlingNostrTransport", targets: ["StarlingNostrTransport"]),
        .executable(name: "starling", targets: ["starling"]),
        .executable(name: "starling-bench", targets: ["starling-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
