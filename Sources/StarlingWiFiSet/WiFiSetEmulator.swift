import Foundation
import StarlingWire

/// A simulated Wi-Fi environment for the device emulator: the networks the
/// device "sees", each with the password that lets it join (`networks.json`).
public struct WiFiEnvironment: Codable, Hashable, Sendable {
    public struct Network: Codable, Hashable, Sendable {
        public var ssid: String
        public var rssi: Int8
        public var security: String
        public var channel: UInt8
        /// The password that works (ignored for open networks).
        public var password: String?
        public init(ssid: String, rssi: Int8, security: String, channel: UInt8, password: String? = nil) {
            self.ssid = ssid
            self.rssi = rssi
            self.security = security
            self.channel = channel
            self.password = password
        }

        public var securityType: WiFiSet.Security {
            switch security.lowercased() {
            case "open", "none": .open
            case "wep": .wep
            case "wpa3", "sae": .wpa3
            case "wpa2-enterprise", "enterprise", "eap": .wpa2Enterprise
            default: .wpaPSK
            }
        }
    }

    public var networks: [Network]
    /// Virtual delays of the simulated radio, ms.
    public var scanDelay: UInt64?
    public var connectDelay: UInt64?
    /// A scan that fails (for tests of Error 0x02).
    public var scanFails: Bool?

    public init(networks: [Network], scanDelay: UInt64? = nil, connectDelay: UInt64? = nil) {
        self.networks = networks
        self.scanDelay = scanDelay
        self.connectDelay = connectDelay
    }

    public static func load(_ url: URL) throws -> WiFiEnvironment {
        try JSONDecoder().decode(WiFiEnvironment.self, from: Data(contentsOf: url))
    }

    /// The networks as a scan reports them, strongest first.
    public var scan: [WiFiSet.Network] {
        networks.sorted { $0.rssi > $1.rssi }.map {
            WiFiSet.Network(ssid: $0.ssid, rssi: $0.rssi, security: $0.securityType, channel: $0.channel)
        }
    }

    /// Whether these credentials join a network here; nil: no such network (the attempt times out).
    public func join(ssid: String, password: String) -> Bool? {
        guard let n = networks.first(where: { $0.ssid == ssid }) else { return nil }
        return n.securityType == .open || n.password == password
    }
}

/// Where a device keeps its credentials (NVS on an ESP32).
public protocol CredentialStore: Sendable {
    func load() -> (ssid: String, password: String)?
    func save(ssid: String, password: String) throws
}

/// Credentials in a JSON file, readable by its owner only (0600).
public struct FileCredentialStore: CredentialStore {
    public let url: URL
    public init(url: URL) { self.url = url }

    struct Stored: Codable { var ssid: String; var password: String }

    public func load() -> (ssid: String, password: String)? {
        guard let data = try? Data(contentsOf: url), let s = try? JSONDecoder().decode(Stored.self, from: data) else { return nil }
        return (s.ssid, s.password)
    }

    public func save(ssid: String, password: String) throws {
        let data = try JSONEncoder().encode(Stored(ssid: ssid, password: password))
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }
}

/// The device emulator: a ``WiFiSetDevice`` driven over a peripheral link,
/// with a simulated Wi-Fi environment and a credential store.
public actor WiFiSetEmulator {
    public enum Event: Sendable {
        case output(WiFiSetDevice.Output)
        case status(WiFiSet.Status)
    }

    private var device: WiFiSetDevice
    private let peripheral: any WiFiSetPeripheral
    private let environment: WiFiEnvironment
    private let store: any CredentialStore
    private var timer: Task<Void, Never>?
    private var tasks: [Task<Void, Never>] = []
    public nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private var connectAttempt = 0

    public init(peripheral: any WiFiSetPeripheral, environment: WiFiEnvironment, store: any CredentialStore,
                configuration: WiFiSetDevice.Configuration) {
        self.peripheral = peripheral
        self.environment = environment
        self.store = store
        self.device = WiFiSetDevice(configuration: configuration, stored: store.load())
        self.lastReported = device.status
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1_000))
    }

    public var status: WiFiSet.Status { device.status }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// Serves the link, one phone after another, until the link closes.
    public func run() async {
        for await event in peripheral.events {
            switch event {
            case let .subscribed(c): await handle(.subscribed(c))
            case let .written(c, v): await handle(.written(c, v))
            case .disconnected: await handle(.disconnected)
            }
        }
        timer?.cancel()
        for t in tasks { t.cancel() }
        continuation.finish()
    }

    private var lastReported: WiFiSet.Status

    private func handle(_ input: WiFiSetDevice.Input) async {
        let outputs = device.handle(input, now: Self.now())
        await perform(outputs)
        reportStatus()
        armTimer()
    }

    /// Each status once, as it changes.
    private func reportStatus() {
        if device.status != lastReported {
            lastReported = device.status
            continuation.yield(.status(device.status))
        }
    }

    private func perform(_ outputs: [WiFiSetDevice.Output]) async {
        for output in outputs {
            continuation.yield(.output(output))
            switch output {
            case let .notify(c, value):
                await peripheral.notify(c, value)
            case .scan:
                let delay = environment.scanDelay ?? 300
                let env = environment
                later(delay) { me in
                    await me.handle(env.scanFails == true ? .scanFailed("the radio would not scan") : .scanned(env.scan))
                }
            case let .store(ssid, password):
                do {
                    try store.save(ssid: ssid, password: password)
                    await handle(.stored(failure: nil))
                } catch {
                    await handle(.stored(failure: "\(error)"))
                }
            case let .connect(ssid, password):
                connectAttempt += 1
                let attempt = connectAttempt
                let delay = environment.connectDelay ?? 1_000
                guard let ok = environment.join(ssid: ssid, password: password) else { continue } // not found: the timeout decides
                let index = environment.networks.firstIndex { $0.ssid == ssid } ?? 0
                let rssi = environment.networks[index].rssi
                later(delay) { me in
                    guard await me.isCurrent(attempt) else { return }
                    await me.handle(ok ? .connected(ip: [192, 168, 1, UInt8(100 + index % 100)], rssi: rssi)
                                       : .connectFailed("authentication failed"))
                }
            case .cancelConnect:
                connectAttempt += 1
            }
        }
    }

    private func isCurrent(_ attempt: Int) -> Bool { attempt == connectAttempt }

    private func later(_ ms: UInt64, _ body: @escaping @Sendable (WiFiSetEmulator) async -> Void) {
        tasks.removeAll { $0.isCancelled }
        tasks.append(Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(ms))
            guard let self, !Task.isCancelled else { return }
            await body(self)
        })
    }

    private func armTimer() {
        timer?.cancel()
        guard let deadline = device.nextDeadline else { timer = nil; return }
        let wait = deadline > Self.now() ? deadline - Self.now() : 0
        timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(wait))
            guard let self, !Task.isCancelled else { return }
            await self.fire()
        }
    }

    private func fire() async {
        await perform(device.tick(now: Self.now()))
        reportStatus()
        armTimer()
    }
}
