import Foundation
import Logging
import StarlingDBus

/// BlueZ, the Linux Bluetooth stack, over D-Bus: what the BLE transport needs
/// of it. Both roles: a GATT peripheral (an application with one service and
/// one characteristic, and an LE advertisement) and a central (discovery,
/// connection, notifications, writes without response).
public enum BlueZ {
    /// Where failures that end nothing are told: a clean-up call that BlueZ
    /// refused (a device already gone, an advertisement already removed).
    public static let logger = Logger(label: "starling.bluez")

    /// Runs a call whose failure changes nothing for the caller; a failure is logged, not thrown.
    @discardableResult
    public static func attempt<T>(_ what: String, _ body: () async throws -> T) async -> T? {
        do { return try await body() } catch {
            logger.debug("\(what) failed", metadata: ["error": "\(error)"])
            return nil
        }
    }

    public static let bus = "org.bluez"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"

    /// Every object BlueZ has, with its interfaces and their properties.
    public static func objects(_ bus: DBusConnection) async throws -> [String: [String: [String: DBusValue]]] {
        let reply = try await bus.call(Self.bus, "/", objectManager, "GetManagedObjects")
        var out: [String: [String: [String: DBusValue]]] = [:]
        for (path, interfaces) in reply.first?.dictionary ?? [:] {
            var ifaces: [String: [String: DBusValue]] = [:]
            for (name, props) in interfaces.dictionary ?? [:] { ifaces[name] = props.dictionary ?? [:] }
            out[path] = ifaces
        }
        return out
    }

    /// The adapters (hci0, hci1 …) by object path, with their properties.
    public static func adapters(_ bus: DBusConnection) async throws -> [String: [String: DBusValue]] {
        try await objects(bus).compactMapValues { $0["org.bluez.Adapter1"] }
    }

    public static func set(_ bus: DBusConnection, _ path: String, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        _ = try await bus.call(Self.bus, path, properties, "Set", [.string(interface), .string(name), .variant(value)])
    }
}

/// A characteristic of a service this node serves: its UUID and GATT flags.
public struct GATTCharacteristicSpec: Hashable, Sendable {
    public var uuid: String
    public var flags: [String]
    public init(uuid: String, flags: [String]) {
        self.uuid = uuid.lowercased()
        self.flags = flags
    }
}

/// This node as a BLE peripheral: a GATT application with one service and its
/// characteristics, and (optionally) an LE advertisement of the service UUID
/// with no local name. The mesh serves one characteristic (notify, write,
/// write without response, read); WiFiSet serves three.
public final class BlueZPeripheral: @unchecked Sendable {
    public let adapter: String
    public let serviceUUID: String
    public let characteristics: [GATTCharacteristicSpec]
    public let root: String
    public let advertise: Bool
    private let bus: DBusConnection
    private let lock = NSLock()
    private var values: [String: [UInt8]] = [:]
    private var notifying: Set<String> = []

    /// Values centrals wrote: the device object that wrote each, the
    /// characteristic, and the MTU BlueZ reported.
    public struct Write: Sendable {
        public var device: String
        public var characteristic: String
        public var bytes: [UInt8]
        public var mtu: Int?
    }
    public enum Event: Sendable {
        case write(Write)
        /// A central turned notifications on (or off) for a characteristic.
        case subscribed(String)
        case unsubscribed(String)
    }
    public let events: AsyncStream<Event>
    private let eventContinuation: AsyncStream<Event>.Continuation

    /// Writes only (the mesh's view of ``events``).
    public var writes: AsyncCompactMapSequence<AsyncStream<Event>, Write> {
        events.compactMap { if case let .write(w) = $0 { w } else { nil } }
    }

    var servicePath: String { root + "/service0" }
    func path(of index: Int) -> String { root + "/service0/char\(index)" }
    var advertisementPath: String { root + "/advertisement0" }

    public init(bus: DBusConnection, adapter: String, serviceUUID: String, characteristics: [GATTCharacteristicSpec],
                root: String = "/org/starling/ble", advertise: Bool = true) {
        self.bus = bus
        self.adapter = adapter
        self.serviceUUID = serviceUUID.lowercased()
        self.characteristics = characteristics
        self.root = root
        self.advertise = advertise
        (events, eventContinuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1_024))
    }

    /// The mesh's service: one characteristic for everything.
    public convenience init(bus: DBusConnection, adapter: String, serviceUUID: String, characteristicUUID: String,
                            root: String = "/org/starling/ble") {
        self.init(bus: bus, adapter: adapter, serviceUUID: serviceUUID,
                  characteristics: [.init(uuid: characteristicUUID, flags: ["read", "write", "write-without-response", "notify"])],
                  root: root)
    }

    public var isNotifying: Bool { lock.withLock { !notifying.isEmpty } }

    func serviceProperties() -> [String: DBusValue] {
        // Only GattService1's documented properties (strict clients refuse others).
        ["UUID": .string(serviceUUID), "Primary": .bool(true), "Handle": .uint16(0x000C)]
    }

    func characteristicProperties(_ i: Int) -> [String: DBusValue] {
        let c = characteristics[i]
        return lock.withLock {
            ["UUID": .string(c.uuid), "Service": .objectPath(servicePath), "Value": .bytes(values[c.uuid] ?? []),
             "Notifying": .bool(notifying.contains(c.uuid)), "Flags": .strings(c.flags), "Handle": .uint16(UInt16(0x0010 + 2 * i))]
        }
    }

    func advertisementProperties() -> [String: DBusValue] {
        ["Type": .string("peripheral"), "ServiceUUIDs": .strings([serviceUUID]), "Discoverable": .bool(true)]
    }

    /// Exports the objects and registers them with BlueZ.
    public func start() async throws {
        try bus.export(root, subtree: true) { [weak self] call in
            guard let self else { return .notHandled }
            return self.handle(call)
        }
        _ = try await bus.call(BlueZ.bus, adapter, "org.bluez.GattManager1", "RegisterApplication",
                               [.objectPath(root), .properties([:])])
        if advertise {
            _ = try await bus.call(BlueZ.bus, adapter, "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement",
                                   [.objectPath(advertisementPath), .properties([:])])
        }
    }

    public func stop() async {
        if advertise {
            await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, adapter, "org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement", [.objectPath(advertisementPath)]) }
        }
        await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, adapter, "org.bluez.GattManager1", "UnregisterApplication", [.objectPath(root)]) }
        bus.unexport(root)
        eventContinuation.finish()
    }

    /// Notifies every subscribed central (BlueZ sends a notification to each).
    public func notify(_ bytes: [UInt8], on uuid: String? = nil) throws {
        let u = (uuid ?? characteristics[0].uuid).lowercased()
        guard let i = characteristics.firstIndex(where: { $0.uuid == u }) else { return }
        lock.withLock { values[u] = bytes }
        try bus.emit(path(of: i), BlueZ.properties, "PropertiesChanged",
                     [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes(bytes)]), .strings([])])
    }

    private func index(of path: String) -> Int? {
        characteristics.indices.first { self.path(of: $0) == path }
    }

    private func props(of path: String, _ interface: String) -> [String: DBusValue]? {
        if path == servicePath, interface == "org.bluez.GattService1" { return serviceProperties() }
        if path == advertisementPath, interface == "org.bluez.LEAdvertisement1" { return advertisementProperties() }
        if interface == "org.bluez.GattCharacteristic1", let i = index(of: path) { return characteristicProperties(i) }
        return nil
    }

    private func handle(_ call: DBusMessageInfo) -> DBusReply {
        let path = call.path ?? ""
        switch (call.interface, call.member) {
        case (BlueZ.objectManager, "GetManagedObjects") where path == root:
            var objects: [(String, String, [String: DBusValue])] = [(servicePath, "org.bluez.GattService1", serviceProperties())]
            for i in characteristics.indices {
                objects.append((self.path(of: i), "org.bluez.GattCharacteristic1", characteristicProperties(i)))
            }
            return .values([.dictionary(key: "o", value: "a{sa{sv}}", objects.map { p, i, props in
                .init(.objectPath(p), .dictionary(key: "s", value: "a{sv}", [.init(.string(i), .properties(props))]))
            })])
        case (BlueZ.properties, "GetAll"):
            guard let iface = call.args.first?.string else { return .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "interface?") }
            return .values([.properties(props(of: path, iface) ?? [:])])
        case (BlueZ.properties, "Get"):
            guard call.args.count == 2, let iface = call.args[0].string, let name = call.args[1].string,
                  let v = props(of: path, iface)?[name] else {
                return .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
            }
            return .values([.variant(v)])
        case ("org.bluez.GattCharacteristic1", let member?):
            guard let i = index(of: path) else { return .notHandled }
            let uuid = characteristics[i].uuid
            switch member {
            case "ReadValue":
                return .values([.bytes(lock.withLock { values[uuid] ?? [] })])
            case "WriteValue":
                guard let bytes = call.args.first?.bytes else { return .error(name: "org.bluez.Error.InvalidArguments", message: "value?") }
                let options = call.args.dropFirst().first?.dictionary
                eventContinuation.yield(.write(Write(device: options?["device"]?.string ?? "", characteristic: uuid, bytes: bytes,
                                                     mtu: options?["mtu"]?.int)))
                return .values([])
            case "StartNotify":
                lock.withLock { _ = notifying.insert(uuid) }
                eventContinuation.yield(.subscribed(uuid))
                return .values([])
            case "StopNotify":
                lock.withLock { _ = notifying.remove(uuid) }
                eventContinuation.yield(.unsubscribed(uuid))
                return .values([])
            case "Confirm":
                return .values([])
            default:
                return .notHandled
            }
        case ("org.bluez.LEAdvertisement1", "Release"):
            return .values([])
        default:
            return .notHandled
        }
    }
}

/// This node as a BLE central: finds devices that offer the service (filtered
/// here, not by BlueZ's UUID filter, which has crashed bluetoothd 5.87),
/// connects, subscribes, writes.
public final class BlueZCentral: @unchecked Sendable {
    public let adapter: String
    public let serviceUUID: String
    public let characteristicUUID: String
    private let bus: DBusConnection

    public init(bus: DBusConnection, adapter: String, serviceUUID: String, characteristicUUID: String = "") {
        self.bus = bus
        self.adapter = adapter
        self.serviceUUID = serviceUUID.lowercased()
        self.characteristicUUID = characteristicUUID.lowercased()
    }

    public func startDiscovery() async throws {
        _ = try await bus.call(BlueZ.bus, adapter, "org.bluez.Adapter1", "StartDiscovery")
    }

    public func stopDiscovery() async {
        await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, adapter, "org.bluez.Adapter1", "StopDiscovery") }
    }

    /// Devices under this adapter that advertise the service, with their RSSI when known.
    public func candidates() async throws -> [(path: String, address: String, rssi: Int?)] {
        try await BlueZ.objects(bus).compactMap { path, ifaces in
            guard path.hasPrefix(adapter + "/"), let d = ifaces["org.bluez.Device1"],
                  let uuids = d["UUIDs"]?.array?.compactMap(\.string).map({ $0.lowercased() }),
                  uuids.contains(serviceUUID) else { return nil }
            return (path, d["Address"]?.string ?? "", d["RSSI"]?.int)
        }.sorted { $0.path < $1.path }
    }

    /// Waits (polling, bounded) until some device offers the service; empty when none did in time.
    public func discover(within timeout: Duration) async throws -> [(path: String, address: String, rssi: Int?)] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let found = try await candidates()
            if !found.isEmpty || ContinuousClock.now >= deadline { return found }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Removes device objects under this adapter that are not connected and not
    /// in `keep`: phones rotate their address about every 15 minutes, and each
    /// old address would stay behind. Returns the paths removed.
    @discardableResult
    public func pruneStale(keeping keep: Set<String>) async throws -> [String] {
        var removed: [String] = []
        for (path, ifaces) in try await BlueZ.objects(bus) where path.hasPrefix(adapter + "/") && !keep.contains(path) {
            guard let d = ifaces["org.bluez.Device1"], d["Connected"]?.bool != true else { continue }
            if await BlueZ.attempt("RemoveDevice", { try await bus.call(BlueZ.bus, adapter, "org.bluez.Adapter1", "RemoveDevice", [.objectPath(path)]) }) != nil {
                removed.append(path)
            }
        }
        return removed.sorted()
    }

    /// Connects and finds the characteristics (by UUID) once services resolve;
    /// `optional` ones are taken when the device has them (a bitchat phone has
    /// no Stately characteristic).
    public func connectGATT(_ device: String, characteristics uuids: [String], optional: [String] = [],
                            timeout: Duration = .seconds(10)) async throws -> BlueZDevice {
        try await bus.addMatch("type='signal',sender='\(BlueZ.bus)',interface='\(BlueZ.properties)',member='PropertiesChanged',path_namespace='\(device)'")
        do {
            _ = try await bus.call(BlueZ.bus, device, "org.bluez.Device1", "Connect", timeout: timeout)
        } catch {
            // A timed-out attempt is cancelled, not left pending in BlueZ.
            await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, device, "org.bluez.Device1", "Disconnect", timeout: .seconds(2)) }
            throw error
        }
        let wanted = Set(uuids.map { $0.lowercased() })
        let welcome = wanted.union(optional.map { $0.lowercased() })
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let objects = try await BlueZ.objects(bus)
            var found: [String: String] = [:]
            var mtu = 23
            for (p, ifaces) in objects where p.hasPrefix(device + "/") {
                if let c = ifaces["org.bluez.GattCharacteristic1"], let u = c["UUID"]?.string?.lowercased(), welcome.contains(u) {
                    found[u] = p
                    mtu = max(mtu, c["MTU"]?.int ?? 23)
                }
            }
            if wanted.isSubset(of: found.keys) { return BlueZDevice(bus: bus, device: device, characteristics: found, mtu: mtu) }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw DBusError(name: "org.starling.Error.Timeout", message: "the characteristics \(uuids) did not appear on \(device)")
    }

    /// The mesh's link: connect, find the one characteristic, subscribe.
    public func connect(_ device: String, timeout: Duration = .seconds(10)) async throws -> BlueZLink {
        let d = try await connectGATT(device, characteristics: [characteristicUUID], timeout: timeout)
        let link = BlueZLink(device: d, characteristic: characteristicUUID) // reading before the first notification
        try await d.subscribe(characteristicUUID)
        return link
    }
}

/// A connected GATT server: its characteristics by UUID.
public final class BlueZDevice: @unchecked Sendable {
    public let device: String
    /// The ATT MTU BlueZ reports (a value carries MTU − 3 bytes).
    public let mtu: Int
    let bus: DBusConnection
    let paths: [String: String]

    init(bus: DBusConnection, device: String, characteristics: [String: String], mtu: Int) {
        self.bus = bus
        self.device = device
        self.paths = characteristics
        self.mtu = mtu
    }

    public func has(_ uuid: String) -> Bool { paths[uuid.lowercased()] != nil }

    func path(_ uuid: String) throws -> String {
        guard let p = paths[uuid.lowercased()] else { throw DBusError(name: "org.starling.Error.NoCharacteristic", message: uuid) }
        return p
    }

    public func subscribe(_ uuid: String) async throws {
        _ = try await bus.call(BlueZ.bus, try path(uuid), "org.bluez.GattCharacteristic1", "StartNotify")
    }

    /// Writes a value; `withResponse` false is a write command (no response).
    public func write(_ bytes: [UInt8], to uuid: String, withResponse: Bool = false) async throws {
        _ = try await bus.call(BlueZ.bus, try path(uuid), "org.bluez.GattCharacteristic1", "WriteValue",
                               [.bytes(bytes), .properties(["type": .string(withResponse ? "request" : "command")])])
    }

    /// Notified values, with the characteristic's UUID.
    public var notifications: AsyncStream<(String, [UInt8])> {
        let byPath = Dictionary(uniqueKeysWithValues: paths.map { ($0.value, $0.key) })
        let signals = bus.signals
        return AsyncStream { continuation in
            let task = Task {
                for await s in signals where s.member == "PropertiesChanged" && s.args.first?.string == "org.bluez.GattCharacteristic1" {
                    guard let path = s.path, let uuid = byPath[path], let v = s.args.dropFirst().first?.dictionary?["Value"]?.bytes else { continue }
                    continuation.yield((uuid, v))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func disconnect() async {
        for p in paths.values { await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, p, "org.bluez.GattCharacteristic1", "StopNotify") } }
        await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, device, "org.bluez.Device1", "Disconnect") }
    }
}

/// One connection to a peripheral for the mesh: write without response, notifications in.
public final class BlueZLink: @unchecked Sendable {
    public let gatt: BlueZDevice
    public let characteristic: String
    public var device: String { gatt.device }
    public var mtu: Int { gatt.mtu }
    public let notifications: AsyncStream<[UInt8]>

    init(device: BlueZDevice, characteristic: String) {
        gatt = device
        self.characteristic = characteristic
        let all = device.notifications
        notifications = AsyncStream { continuation in
            let task = Task {
                for await (_, v) in all { continuation.yield(v) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func write(_ bytes: [UInt8]) async throws { try await gatt.write(bytes, to: characteristic) }

    public func disconnect() async { await gatt.disconnect() }
}
