import Foundation
import Logging
import StarlingBlueZ
import StarlingDBus
import StarlingTransport
import StarlingWire

/// Bluetooth LE through BlueZ, both roles at once (seed 001, chapter 8): as a
/// peripheral it advertises the bitchat service and takes writes; as a central
/// it discovers devices offering the service, connects and subscribes. Each
/// connection is a link, named by the device object BlueZ gives it.
///
/// Two Starling nodes would otherwise connect to each other twice: the one with
/// the lower adapter address acts as the central, the other only as the
/// peripheral. Phones (bitchat) connect as they like.
public final class BLETransport: Transport, @unchecked Sendable {
    public let name = "ble"
    public static let serviceUUID = "F47B5E2D-4A9E-4C5A-9B3F-8E1D2C3A4B5C"
    public static let characteristicUUID = "A1B2C3D4-E5F6-4A5B-8C9D-0E1F2A3B4C5D"
    /// Stately's own characteristic in the same service (docs/PROTOCOL.md).
    public static let statelyUUID = "53544154-4553-4C5A-9B3F-8E1D2C3A4B5C"

    static func uuid(of channel: FrameChannel) -> String {
        channel == .mesh ? characteristicUUID.lowercased() : statelyUUID.lowercased()
    }

    static func channel(of uuid: String) -> FrameChannel {
        uuid.lowercased() == statelyUUID.lowercased() ? .stately : .mesh
    }

    public enum Failure: Error, CustomStringConvertible {
        case noBus(String)
        case noAdapter(String, available: [String])
        case poweredOff(String)

        public var description: String {
            switch self {
            case let .noBus(why): "Bluetooth is not reachable (BlueZ over D-Bus): \(why). Is bluetoothd running, and may this user use it?"
            case let .noAdapter(a, available):
                "no Bluetooth adapter \(a)" + (available.isEmpty ? " (none at all: is there a radio?)" : "; there is \(available.joined(separator: ", "))")
            case let .poweredOff(a): "Bluetooth adapter \(a) is off: turn it on (bluetoothctl power on)"
            }
        }
    }

    public let adapter: String
    /// Links at most (a phone holds 6–8; the power mode's link budget).
    public var maxLinks = 8
    /// Devices heard weaker than this are not connected to (dBm).
    public var minRSSI = -90
    /// Scanning runs this share of each 10 s window (the power mode's duty cycle).
    public var scanDutyCycle = 1.0
    /// When BlueZ (or the system bus, or the adapter) went away: how often it is looked for again.
    public var retryInterval: Duration = .seconds(2)
    private var failures: [String: (count: Int, retryAt: ContinuousClock.Instant)] = [:]
    /// When set, only these device addresses are linked (an operator's
    /// allow-list; tests use it to make lines out of adapters that all hear each other).
    public var allowed: Set<String>?
    private let busAddress: String
    /// The bus connection now (a new one after the bus came back). Under `lock`.
    private var connection: DBusConnection
    private var bus: DBusConnection { lock.withLock { connection } }
    private let adapterPath: String
    private var peripheralNow: BlueZPeripheral?
    private var centralNow: BlueZCentral?
    private var peripheral: BlueZPeripheral? { lock.withLock { peripheralNow } }
    private let lock = NSLock()
    private var centralLinks: [String: BlueZDevice] = [:]
    private var peripheralLinks: [String: Int] = [:]
    /// Between two frames sent back to back (BLE controllers drop bursts).
    public var pacing: Duration = .milliseconds(20)
    private let outbox: AsyncStream<([UInt8], [String], FrameChannel)>
    private let outboxContinuation: AsyncStream<([UInt8], [String], FrameChannel)>.Continuation
    private var outboxTask: Task<Void, Never>?
    /// The tasks of the service as registered now (ended when BlueZ goes away).
    private var tasks: [Task<Void, Never>] = []
    /// Looking for BlueZ again after it went away.
    private var recovery: Task<Void, Never>?
    /// Registered with BlueZ now; stopping (no recovery then).
    private var attached = false
    private var stopping = false
    /// The task reading each central-role link's notifications.
    private var linkTasks: [String: Task<Void, Never>] = [:]
    private var ownAddress = ""
    public let events: AsyncStream<TransportEvent>
    private let continuation: AsyncStream<TransportEvent>.Continuation
    /// Where failures that end nothing (a write that failed, a device that would not disconnect) are told.
    public var logger = Logger(label: "starling.ble")

    public init(adapter: String = "hci0", busAddress: String = DBusConnection.systemBusAddress) throws {
        self.adapter = adapter
        self.busAddress = busAddress
        adapterPath = adapter.hasPrefix("/") ? adapter : "/org/bluez/" + adapter
        do { connection = try DBusConnection(address: busAddress) } catch { throw Failure.noBus("\(error)") }
        (events, continuation) = AsyncStream.makeStream(of: TransportEvent.self, bufferingPolicy: .bufferingNewest(4_096))
        (outbox, outboxContinuation) = AsyncStream.makeStream(of: ([UInt8], [String], FrameChannel).self, bufferingPolicy: .bufferingNewest(4_096))
    }

    /// Checks the adapter, registers the peripheral, starts scanning. When
    /// BlueZ, the bus or the adapter goes away later, the links go down, a
    /// notice says so, and the service is registered again once it is back.
    public func start() async throws {
        try await attach(bus)
        outboxTask = Task { [weak self] in
            guard let outbox = self?.outbox else { return }
            for await (bytes, ids, channel) in outbox {
                guard let self else { return }
                await self.transmit(bytes, to: ids, on: channel)
                try? await Task.sleep(for: self.pacing)
            }
        }
    }

    /// Registers the service on `bus` and starts this registration's tasks.
    private func attach(_ bus: DBusConnection) async throws {
        let adapters: [String: [String: DBusValue]]
        do { adapters = try await BlueZ.adapters(bus) } catch { throw Failure.noBus("\(error)") }
        guard let props = adapters[adapterPath] else {
            throw Failure.noAdapter(adapter, available: adapters.keys.sorted().map { ($0 as NSString).lastPathComponent })
        }
        guard props["Powered"]?.bool == true else { throw Failure.poweredOff(adapter) }
        ownAddress = props["Address"]?.string ?? ""
        // Watched before anything is registered: a BlueZ that goes away meanwhile is seen.
        try await bus.addMatch("type='signal',sender='\(BlueZ.bus)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path_namespace='\(adapterPath)'")
        try await bus.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(BlueZ.bus)'")
        try await bus.addMatch("type='signal',sender='\(BlueZ.bus)',interface='org.freedesktop.DBus.ObjectManager',member='InterfacesRemoved'")
        let signals = bus.signals
        let flags = ["read", "write", "write-without-response", "notify"]
        let p = BlueZPeripheral(bus: bus, adapter: adapterPath, serviceUUID: Self.serviceUUID,
                                characteristics: [.init(uuid: Self.characteristicUUID, flags: flags), .init(uuid: Self.statelyUUID, flags: flags)])
        do { try await p.start() } catch {
            await p.stop() // what was exported goes, so that the next attempt can export it again
            throw error
        }
        let c = BlueZCentral(bus: bus, adapter: adapterPath, serviceUUID: Self.serviceUUID, characteristicUUID: Self.characteristicUUID)
        do { try await c.startDiscovery() } catch {
            await p.stop()
            throw error
        }
        var started: [Task<Void, Never>] = []
        started.append(Task { [weak self] in
            for await w in p.writes {
                guard let self else { return }
                self.peripheralWrite(w)
            }
        })
        let adapterPath = self.adapterPath
        started.append(Task { [weak self] in
            for await sig in signals {
                guard let self else { return }
                switch sig.member ?? "" {
                case "PropertiesChanged" where sig.args.first?.string == "org.bluez.Device1":
                    // A device that disconnects (either role) ends its link at once.
                    guard let path = sig.path, sig.args.dropFirst().first?.dictionary?["Connected"]?.bool == false,
                          self.isLinked(path) else { continue }
                    // A signal may be older than the link it seems to end: ask BlueZ now.
                    let connected = await BlueZ.attempt("Get Connected") { try await bus.call(BlueZ.bus, path, "org.freedesktop.DBus.Properties", "Get",
                                                             [.string("org.bluez.Device1"), .string("Connected")]) }
                    if connected?.first?.bool != true { self.deviceDisconnected(path) }
                case "PropertiesChanged" where sig.args.first?.string == "org.bluez.Adapter1" && sig.path == adapterPath:
                    if sig.args.dropFirst().first?.dictionary?["Powered"]?.bool == false {
                        await self.lost("adapter \(self.adapter) was turned off")
                        return
                    }
                case "NameOwnerChanged" where sig.args.first?.string == BlueZ.bus && (sig.args.dropFirst(2).first?.string ?? "").isEmpty:
                    await self.lost("BlueZ (bluetoothd) stopped")
                    return
                case "InterfacesRemoved" where sig.args.first?.string == adapterPath
                    && (sig.args.dropFirst().first?.array?.compactMap(\.string) ?? []).contains("org.bluez.Adapter1"):
                    await self.lost("adapter \(self.adapter) was removed")
                    return
                default:
                    continue
                }
            }
            // The stream ends when the bus connection does (or at stop(): nothing to recover then).
            await self?.lost("the system bus went away")
        })
        started.append(Task { [weak self] in
            var scanning = true
            var windowStart = ContinuousClock.now
            var nextPrune = ContinuousClock.now + .seconds(900)
            while !Task.isCancelled {
                guard let self else { return }
                // Duty-cycled scanning: on for the duty share of each 10 s window.
                let into = ContinuousClock.now - windowStart
                if into >= .seconds(10) { windowStart = .now }
                let on = into < .seconds(10) * self.scanDutyCycle || self.scanDutyCycle >= 1
                if on != scanning {
                    scanning = on
                    if on { await BlueZ.attempt("StartDiscovery") { try await c.startDiscovery() } } else { await c.stopDiscovery() }
                }
                await self.connectNewPeers(c)
                if ContinuousClock.now >= nextPrune {
                    nextPrune = .now + .seconds(900)
                    let linked = self.lock.withLock { Set(self.centralLinks.values.map(\.device)) }
                    await BlueZ.attempt("prune stale devices") { try await c.pruneStale(keeping: linked) }
                }
                try? await Task.sleep(for: .seconds(1))
            }
        })
        let stopped = lock.withLock { () -> Bool in
            guard !stopping else { return true }
            peripheralNow = p
            centralNow = c
            tasks = started
            attached = true
            return false
        }
        if stopped {
            for t in started { t.cancel() }
            await c.stopDiscovery()
            await p.stop()
        }
    }

    /// BlueZ, the bus or the adapter went away: every link goes down, a notice
    /// says so once, and the service is looked for again every `retryInterval`.
    private func lost(_ why: String) async {
        let taken = lock.withLock { () -> (tasks: [Task<Void, Never>], readers: [Task<Void, Never>], links: [String],
                                            peripheral: BlueZPeripheral?)? in
            guard attached, !stopping else { return nil }
            attached = false
            let links = Array(centralLinks.keys) + Array(peripheralLinks.keys)
            defer {
                tasks = []; linkTasks = [:]; centralLinks = [:]; peripheralLinks = [:]; failures = [:]
                peripheralNow = nil; centralNow = nil
            }
            return (tasks, Array(linkTasks.values), links, peripheralNow)
        }
        guard let taken else { return }
        for t in taken.tasks + taken.readers { t.cancel() }
        for id in taken.links.sorted() { continuation.yield(.down(id)) }
        continuation.yield(.notice("Bluetooth (\(adapter)): \(why); its links are down. Looking for it again every \(retryInterval.components.seconds) s."))
        logger.notice("Bluetooth went away", metadata: ["adapter": "\(adapter)", "why": "\(why)"])
        // What was exported goes (calls to a BlueZ that is gone fail at once).
        await taken.peripheral?.stop()
        let task = Task { [weak self] in
            guard let self else { return }
            await self.recover()
        }
        let keep = lock.withLock { () -> Bool in
            guard !stopping else { return false }
            recovery = task
            return true
        }
        if !keep { task.cancel() }
    }

    /// Looks for BlueZ again (a new bus connection when the old one is gone) until it is back or the transport stops.
    private func recover() async {
        var attempts = 0
        while !Task.isCancelled, lock.withLock({ !stopping }) {
            try? await Task.sleep(for: retryInterval)
            guard !Task.isCancelled else { return }
            attempts += 1
            var b = bus
            if !b.isConnected {
                let fresh: DBusConnection
                do { fresh = try DBusConnection(address: busAddress) } catch {
                    // Said once at the loss; each attempt's reason goes to the log (a bus that
                    // refuses us, not one that is away, shows here).
                    logger.debug("no system bus yet", metadata: ["adapter": "\(adapter)", "error": "\(error)"])
                    continue
                }
                let old = lock.withLock { () -> DBusConnection in
                    defer { connection = fresh }
                    return connection
                }
                old.close()
                b = fresh
            }
            do {
                try await attach(b)
                continuation.yield(.notice("Bluetooth (\(adapter)) is back: advertising and scanning again."))
                logger.notice("Bluetooth is back", metadata: ["adapter": "\(adapter)", "attempts": "\(attempts)"])
                return
            } catch {
                logger.debug("Bluetooth not back yet", metadata: ["adapter": "\(adapter)", "error": "\(error)"])
            }
        }
    }

    /// "…/dev_00_11_22_33_44_55" → "00:11:22:33:44:55".
    static func address(ofDevice path: String) -> String {
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        return last.hasPrefix("dev_") ? String(last.dropFirst(4)).replacingOccurrences(of: "_", with: ":") : ""
    }

    private func isAllowed(_ address: String) -> Bool { allowed.map { $0.contains(address.uppercased()) } ?? true }

    private func peripheralWrite(_ w: BlueZPeripheral.Write) {
        guard isAllowed(Self.address(ofDevice: w.device)) else { return }
        let id = "p:" + w.device
        // A flood of connections: past the link budget, newcomers are let go.
        if lock.withLock({ peripheralLinks[id] == nil }), linkCount >= maxLinks {
            let bus = self.bus
            Task { await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, w.device, "org.bluez.Device1", "Disconnect") } }
            return
        }
        let frame = max(20, (w.mtu ?? 23) - 3)
        let (new, before, after, all) = lock.withLock { () -> (Bool, Int?, Int, [String]) in
            let before = peripheralLinks.values.min()
            let new = peripheralLinks[id] == nil
            if new { peripheralLinks[id] = frame }
            return (new, before, peripheralLinks.values.min()!, Array(peripheralLinks.keys).sorted())
        }
        if new {
            continuation.yield(.up(id, maxFrame: after))
            if let before, after < before { continuation.yield(.resized(all.filter { $0 != id }, maxFrame: after)) }
        }
        continuation.yield(.frame(id, w.bytes, Self.channel(of: w.characteristic)))
    }

    /// Connects to devices that offer the service, are not linked yet, and
    /// whose address is above ours (the other of two Starling nodes connects
    /// to us instead).
    public var linkCount: Int { lock.withLock { centralLinks.count + peripheralLinks.count } }

    private func connectNewPeers(_ central: BlueZCentral) async {
        guard let found = await BlueZ.attempt("find candidates", { try await central.candidates() }) else { return }
        for d in found where d.address > ownAddress && isAllowed(d.address) && (d.rssi ?? 0) >= minRSSI {
            let id = "c:" + d.path
            guard lock.withLock({ centralLinks[id] == nil }), linkCount < maxLinks else { continue }
            // A device that failed waits 2, 4, 8 … 60 s before the next attempt.
            if let f = lock.withLock({ failures[id] }), ContinuousClock.now < f.retryAt { continue }
            guard let link = await BlueZ.attempt("connect \(d.address)", { try await central.connectGATT(d.path, characteristics: [Self.characteristicUUID],
                                                            optional: [Self.statelyUUID], timeout: .seconds(5)) }) else {
                lock.withLock {
                    let n = (failures[id]?.count ?? 0) + 1
                    failures[id] = (n, .now + .seconds(min(60, 1 << min(n, 6))))
                }
                continue
            }
            lock.withLock {
                failures[id] = nil
                centralLinks[id] = link
            }
            let notifications = link.notifications // reading before the first one can come
            let reader = Task { [weak self] in
                for await (uuid, bytes) in notifications { self?.continuation.yield(.frame(id, bytes, Self.channel(of: uuid))) }
            }
            await BlueZ.attempt("subscribe") { try await link.subscribe(Self.characteristicUUID) }
            if link.has(Self.statelyUUID) { await BlueZ.attempt("subscribe to states") { try await link.subscribe(Self.statelyUUID) } }
            continuation.yield(.up(id, maxFrame: max(20, link.mtu - 3)))
            lock.withLock { linkTasks[id] = reader }
        }
    }

    private func isLinked(_ path: String) -> Bool {
        lock.withLock { centralLinks["c:" + path] != nil || peripheralLinks["p:" + path] != nil }
    }

    /// BlueZ says a device is no longer connected: its links (either role) go down.
    private func deviceDisconnected(_ path: String) {
        let (central, reader, peripheral) = lock.withLock { () -> (Bool, Task<Void, Never>?, Bool) in
            let c = centralLinks.removeValue(forKey: "c:" + path) != nil
            let r = linkTasks.removeValue(forKey: "c:" + path)
            let p = peripheralLinks.removeValue(forKey: "p:" + path) != nil
            return (c, r, p)
        }
        reader?.cancel()
        if central { continuation.yield(.down("c:" + path)) }
        if peripheral { continuation.yield(.down("p:" + path)) }
    }

    /// Ends a link (a peer that never announced, or misbehaved).
    public func close(_ id: String) async {
        if let link = lock.withLock({ centralLinks.removeValue(forKey: id) }) {
            lock.withLock { linkTasks.removeValue(forKey: id) }?.cancel()
            await link.disconnect()
        } else if id.hasPrefix("p:"), lock.withLock({ peripheralLinks.removeValue(forKey: id) }) != nil {
            await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, String(id.dropFirst(2)), "org.bluez.Device1", "Disconnect") }
        }
        continuation.yield(.down(id))
    }

    /// Queues one frame for links; frames go out in order, `pacing` apart.
    public func send(_ bytes: [UInt8], on channel: FrameChannel, to ids: [String]) {
        outboxContinuation.yield((bytes, ids, channel))
    }

    /// A write to each central-role link; one notification for all
    /// peripheral-role links (BlueZ notifies every subscriber).
    private func transmit(_ bytes: [UInt8], to ids: [String], on channel: FrameChannel) async {
        var notify = false
        for id in ids {
            if id.hasPrefix("p:") { notify = true; continue }
            // A device without the Stately characteristic (a bitchat phone) gets no states.
            if let link = lock.withLock({ centralLinks[id] }), link.has(Self.uuid(of: channel)) {
                do { try await link.write(bytes, to: Self.uuid(of: channel)) } catch {
                    logger.debug("write failed", metadata: ["link": "\(id)", "error": "\(error)"])
                }
            }
        }
        if notify {
            do { try peripheral?.notify(bytes, on: Self.uuid(of: channel)) } catch {
                logger.debug("notification failed", metadata: ["error": "\(error)"])
            }
        }
    }

    public func stop() async {
        let (tasks, recovery, central, peripheral) = lock.withLock {
            stopping = true
            return (self.tasks + Array(linkTasks.values), self.recovery, centralNow, peripheralNow)
        }
        outboxContinuation.finish()
        outboxTask?.cancel()
        recovery?.cancel()
        for t in tasks { t.cancel() }
        let bus = self.bus
        // Each call is bounded, and fails at once when BlueZ or the bus is gone.
        for link in lock.withLock({ Array(centralLinks.values) }) { await link.disconnect() }
        // Centrals connected to us are let go too, so that they see the link end now.
        for id in lock.withLock({ Array(peripheralLinks.keys) }) {
            await BlueZ.attempt("call") { try await bus.call(BlueZ.bus, String(id.dropFirst(2)), "org.bluez.Device1", "Disconnect", timeout: .seconds(2)) }
        }
        await central?.stopDiscovery()
        await peripheral?.stop()
        continuation.finish()
        bus.close()
    }
}
