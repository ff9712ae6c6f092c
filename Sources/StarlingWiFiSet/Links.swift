import Foundation
import StarlingWire

/// The phone's end of a GATT connection to a WiFiSet device: what a BLE
/// central does (and what the in-process and socket links imitate), so that
/// the SDK runs unchanged over real BLE later.
public protocol WiFiSetCentral: Sendable {
    /// The ATT MTU agreed for this connection (a value carries MTU − 3 bytes).
    var mtu: Int { get async }
    /// Turns on notifications of a characteristic (for the WiFi List one, the
    /// device answers with a scan).
    func subscribe(_ characteristic: WiFiSetGATT.Characteristic) async throws
    /// One ATT write of at most MTU − 3 bytes.
    func write(_ characteristic: WiFiSetGATT.Characteristic, _ value: [UInt8]) async throws
    /// The values the device notifies.
    var notifications: AsyncStream<(WiFiSetGATT.Characteristic, [UInt8])> { get }
    func disconnect() async
}

/// The device's end: what a GATT server sees.
public protocol WiFiSetPeripheral: Sendable {
    var mtu: Int { get async }
    var events: AsyncStream<WiFiSetPeripheralEvent> { get }
    /// One notification of at most MTU − 3 bytes.
    func notify(_ characteristic: WiFiSetGATT.Characteristic, _ value: [UInt8]) async
}

public enum WiFiSetPeripheralEvent: Hashable, Sendable {
    case subscribed(WiFiSetGATT.Characteristic)
    case written(WiFiSetGATT.Characteristic, [UInt8])
    case disconnected
}

public enum WiFiSetLinkError: Error, Hashable, Sendable, CustomStringConvertible {
    case valueTooLarge(bytes: Int, limit: Int)
    case disconnected

    public var description: String {
        switch self {
        case let .valueTooLarge(bytes, limit): "a \(bytes)-byte value does not fit this link's \(limit)-byte values"
        case .disconnected: "the link is disconnected"
        }
    }
}

/// Two ends of a link in one process, with an MTU, and loss for tests: a
/// value in either direction may be dropped (at random, or by its number).
/// Everything that crosses it can be tapped, as an eavesdropper would. The
/// ends keep the link alive until ``disconnect()``.
public final class InProcessGATT: @unchecked Sendable {
    public struct Faults: Sendable {
        /// Probability that one value is lost, either way.
        public var loss = 0.0
        /// Notifications (numbered from 0) that are lost.
        public var dropNotifications: Set<Int> = []
        public var seed: UInt64 = 1
        public init() {}
    }

    public let mtu: Int
    private let lock = NSLock()
    private var faults: Faults
    private var rngState: UInt64
    private var notified = 0
    private var connected = true
    private var taps: [(toDevice: Bool, characteristic: WiFiSetGATT.Characteristic, value: [UInt8])] = []
    private let toCentral: AsyncStream<(WiFiSetGATT.Characteristic, [UInt8])>.Continuation
    private let toPeripheral: AsyncStream<WiFiSetPeripheralEvent>.Continuation
    public let central: Central
    public let peripheral: Peripheral

    public init(mtu: Int = 512, faults: Faults = Faults()) {
        self.mtu = mtu
        self.faults = faults
        rngState = faults.seed
        let (n, nc) = AsyncStream.makeStream(of: (WiFiSetGATT.Characteristic, [UInt8]).self)
        let (e, ec) = AsyncStream.makeStream(of: WiFiSetPeripheralEvent.self)
        toCentral = nc
        toPeripheral = ec
        central = Central(notifications: n)
        peripheral = Peripheral(events: e)
        central.link = self
        peripheral.link = self
    }

    /// Everything that crossed the link so far, in order.
    public var tapped: [(toDevice: Bool, characteristic: WiFiSetGATT.Characteristic, value: [UInt8])] {
        lock.lock(); defer { lock.unlock() }; return taps
    }

    private func lost() -> Bool {
        guard faults.loss > 0 else { return false }
        rngState &+= 0x9E37_79B9_7F4A_7C15
        var z = rngState
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Double((z ^ (z >> 31)) >> 11) * 0x1.0p-53 < faults.loss
    }

    fileprivate func fromCentral(_ event: WiFiSetPeripheralEvent) throws {
        lock.lock()
        guard connected else { lock.unlock(); throw WiFiSetLinkError.disconnected }
        if case let .written(c, v) = event {
            guard v.count <= WiFiSetGATT.valueSize(mtu: mtu) else {
                lock.unlock()
                throw WiFiSetLinkError.valueTooLarge(bytes: v.count, limit: WiFiSetGATT.valueSize(mtu: mtu))
            }
            taps.append((true, c, v))
            if lost() { lock.unlock(); return }
        }
        lock.unlock()
        toPeripheral.yield(event)
    }

    fileprivate func fromPeripheral(_ c: WiFiSetGATT.Characteristic, _ v: [UInt8]) {
        lock.lock()
        guard connected, v.count <= WiFiSetGATT.valueSize(mtu: mtu) else { lock.unlock(); return }
        taps.append((false, c, v))
        let index = notified
        notified += 1
        let drop = faults.dropNotifications.contains(index) || lost()
        lock.unlock()
        if !drop { toCentral.yield((c, v)) }
    }

    /// Ends the connection (both ends see it), and lets the link go.
    public func disconnect() {
        lock.lock()
        let was = connected
        connected = false
        lock.unlock()
        guard was else { return }
        central.link = nil
        peripheral.link = nil
        toPeripheral.yield(.disconnected)
        toPeripheral.finish()
        toCentral.finish()
    }

    /// The link an end talks through, until it is disconnected (locked: either side may let go).
    final class Attachment: @unchecked Sendable {
        private let lock = NSLock()
        private var value: InProcessGATT?
        var link: InProcessGATT? {
            get { lock.lock(); defer { lock.unlock() }; return value }
            set { lock.lock(); value = newValue; lock.unlock() }
        }
    }

    public final class Central: WiFiSetCentral, @unchecked Sendable {
        let attachment = Attachment()
        fileprivate var link: InProcessGATT? {
            get { attachment.link }
            set { attachment.link = newValue }
        }
        public let notifications: AsyncStream<(WiFiSetGATT.Characteristic, [UInt8])>
        init(notifications: AsyncStream<(WiFiSetGATT.Characteristic, [UInt8])>) { self.notifications = notifications }
        public var mtu: Int { link?.mtu ?? 23 }
        public func subscribe(_ c: WiFiSetGATT.Characteristic) async throws {
            guard let link else { throw WiFiSetLinkError.disconnected }
            try link.fromCentral(.subscribed(c))
        }
        public func write(_ c: WiFiSetGATT.Characteristic, _ value: [UInt8]) async throws {
            guard let link else { throw WiFiSetLinkError.disconnected }
            try link.fromCentral(.written(c, value))
        }
        public func disconnect() async { link?.disconnect() }
    }

    public final class Peripheral: WiFiSetPeripheral, @unchecked Sendable {
        let attachment = Attachment()
        fileprivate var link: InProcessGATT? {
            get { attachment.link }
            set { attachment.link = newValue }
        }
        public let events: AsyncStream<WiFiSetPeripheralEvent>
        init(events: AsyncStream<WiFiSetPeripheralEvent>) { self.events = events }
        public var mtu: Int { link?.mtu ?? 23 }
        public func notify(_ c: WiFiSetGATT.Characteristic, _ value: [UInt8]) async { link?.fromPeripheral(c, value) }
    }
}
