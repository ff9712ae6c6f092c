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

        /// The security words a networks file may use.
        public static let securityNames = ["open", "none", "wep", "wpa", "wpa2", "wpa-psk", "wpa2-psk", "psk", "wpa3", "sae",
                                           "wpa2-enterprise", "enterprise", "eap"]

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
    /// A network not in range is never reported (for tests of the timeout).
    public var silentWhenAbsent: Bool?

    public init(networks: [Network], scanDelay: UInt64? = nil, connectDelay: UInt64? = nil) {
        self.networks = networks
        self.scanDelay = scanDelay
        self.connectDelay = connectDelay
    }

    /// What is wrong with a networks file, in words: which field, and why.
    public enum LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        case unreadable(String)
        case notJSON(String)
        case field(String, String)
        case unknownSecurity(field: String, value: String)

        public var description: String {
            switch self {
            case let .unreadable(why): "cannot read it: \(why)"
            case let .notJSON(why): "not JSON: \(why)"
            case let .field(path, why): "\(path): \(why)"
            case let .unknownSecurity(path, value):
                "\(path): unknown security \"\(value)\" (one of: \(Network.securityNames.joined(separator: ", ")))"
            }
        }
    }

    /// Reads a networks file: `{"networks": [...]}` or a plain array of networks.
    public static func load(_ url: URL) throws -> WiFiEnvironment {
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw LoadError.unreadable((error as NSError).localizedDescription) }
        return try decode(data)
    }

    public static func decode(_ data: Data) throws -> WiFiEnvironment {
        var environment: WiFiEnvironment
        do {
            environment = try JSONDecoder().decode(WiFiEnvironment.self, from: data)
        } catch let DecodingError.typeMismatch(_, context) where context.codingPath.isEmpty {
            do {
                environment = WiFiEnvironment(networks: try JSONDecoder().decode([Network].self, from: data))
            } catch {
                throw words(error, data: data)
            }
        } catch {
            throw words(error, data: data)
        }
        let root = (try? JSONSerialization.jsonObject(with: data)) is [Any] ? "" : "networks"
        for (i, n) in environment.networks.enumerated() where !Network.securityNames.contains(n.security.lowercased()) {
            throw LoadError.unknownSecurity(field: "\(root)[\(i)].security", value: n.security)
        }
        return environment
    }

    static func words(_ error: any Error, data: Data) -> LoadError {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(in: CharacterSet(charactersIn: "."))
        }
        guard let e = error as? DecodingError else { return .notJSON("\(error)") }
        switch e {
        case let .dataCorrupted(c):
            if c.codingPath.isEmpty {
                // The parser says where, as a character offset: as a line and column.
                var said = c.debugDescription
                do { _ = try JSONSerialization.jsonObject(with: data) } catch {
                    said = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? said
                }
                if let range = said.range(of: #"character (\d+)"#, options: .regularExpression),
                   let offset = Int(said[range].dropFirst("character ".count)) {
                    let before = data.prefix(offset)
                    let line = before.filter { $0 == 0x0A }.count + 1
                    let column = offset - (before.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0) + 1
                    said = "\(said.replacingOccurrences(of: #" around character \d+\.?"#, with: "", options: .regularExpression)) at line \(line), column \(column)"
                }
                return .notJSON(said)
            }
            return .field(path(c.codingPath), c.debugDescription)
        case let .keyNotFound(key, c):
            return .field(path(c.codingPath + [key]), "missing")
        case let .typeMismatch(type, c):
            return .field(path(c.codingPath), "expected \(type == String.self ? "text" : type == [Network].self || type == [Any].self ? "a list" : "a number")")
        case let .valueNotFound(_, c):
            return .field(path(c.codingPath), "missing")
        @unknown default:
            return .notJSON("\(error)")
        }
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
                guard let ok = environment.join(ssid: ssid, password: password) else {
                    // Not in range: the radio says so after its scan (an ESP32's NO_AP_FOUND),
                    // unless told to stay silent (then the 30 s timeout decides).
                    if environment.silentWhenAbsent != true {
                        later(delay) { me in
                            guard await me.isCurrent(attempt) else { return }
                            await me.handle(.connectFailed("no network named \(ssid) is in range"))
                        }
                    }
                    continue
                }
                let index = environment.networks.firstIndex { $0.ssid == ssid } ?? 0
                let rssi = environment.networks[index].rssi
                later(delay) { me in
                    guard await me.isCurrent(attempt) else { return }
                    await me.handle(ok ? .connected(ip: [192, 168, 1, UInt8(100 + index % 100)], rssi: rssi)
                                       : .connectFailed("the password was refused"))
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
