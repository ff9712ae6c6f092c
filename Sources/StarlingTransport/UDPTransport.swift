import Foundation
import StarlingWire

/// Bitchat over UDP: one frame per datagram, links by address (the
/// transport of `starling` on a laptop or a Raspberry Pi without Bluetooth).
///
/// - Explicit peers are links from the start; with discovery, a hello every
///   2 s to each loopback rendezvous port (and, with `lan`, to the multicast
///   group) finds the other processes (``Discovery``).
/// - An address not linked yet becomes a link when it sends a hello, or a
///   datagram that decodes as a bitchat packet or a Stately packet; junk from
///   a stranger is counted (``refused``) and links nothing. At most
///   `maxLinks` links.
/// - Stately packets travel after the "STAT" tag (``Channel``).
/// - Fair to senders: each address may send 1,000 datagrams a second (bursts
///   of 4,000); what is over is dropped here (``throttled``), so one flooder
///   cannot fill the node's input queue and starve everyone else's packets.
public final class UDPTransport: Transport, @unchecked Sendable {
    public struct Options: Sendable {
        /// UDP port; nil: the first free rendezvous port (with discovery), else one the system picks.
        public var port: UInt16?
        public var peers: [UDPAddress] = []
        public var discovery = true
        /// Multicast discovery on the local network (opt-in): binds every
        /// interface and joins ``Discovery/lanGroup``.
        public var lan = false
        public var maxLinks = 64
        /// The largest frame a UDP link carries (the node fragments to it); a
        /// longer datagram is dropped as it is read, before it is copied or queued.
        public var maxFrame = 512
        /// Datagrams a second one address may send, and the burst it may send at once.
        public var perAddressRate = 1_000
        public var perAddressBurst = 4_000
        public init() {}
    }

    public let name = "udp"
    public let localPeer: PeerID
    public let options: Options
    public let events: AsyncStream<TransportEvent>
    private let continuation: AsyncStream<TransportEvent>.Continuation
    private let socket: UDPSocket
    private let lanSocket: UDPSocket?
    private let lock = NSLock()
    private var links: [String: UDPAddress] = [:]
    private var tasks: [Task<Void, Never>] = []
    private var refusedCount = 0
    private var throttledCount = 0
    private var buckets: [UDPAddress: (tokens: Double, at: ContinuousClock.Instant)] = [:]
    /// When we last said hello to an address (a hello from it is answered unless we just did:
    /// two nodes never answer each other's answers). Pruned past 2 s; at most 256.
    private var saidHello: [UDPAddress: ContinuousClock.Instant] = [:]

    /// Binds the socket now, so that the port is known before ``start()``.
    public init(localPeer: PeerID, options: Options) throws {
        self.localPeer = localPeer
        self.options = options
        let lan = options.lan
        func bind(_ port: UInt16) -> UDPAddress { lan ? .any(port) : .loopback(port) }
        var socket: UDPSocket?
        if let port = options.port {
            socket = try UDPSocket(bindTo: bind(port))
        } else if options.discovery {
            for p in Discovery.rendezvousPorts {
                if let s = try? UDPSocket(bindTo: bind(p)) { socket = s; break }
            }
        }
        self.socket = try socket ?? UDPSocket(bindTo: bind(0))
        if lan {
            let s = try UDPSocket(bindTo: .any(Discovery.lanGroup.port), reuseAddress: true)
            try s.joinMulticastGroup(Discovery.lanGroup.host)
            lanSocket = s
        } else {
            lanSocket = nil
        }
        (events, continuation) = AsyncStream.makeStream(of: TransportEvent.self, bufferingPolicy: .bufferingNewest(4_096))
    }

    public var port: UInt16 { socket.localPort }
    /// Datagrams from strangers that were neither a hello nor a packet.
    public var refused: Int { lock.withLock { refusedCount } }
    public var linkCount: Int { lock.withLock { links.count } }
    /// Datagrams dropped because their address sent over its rate.
    public var throttled: Int { lock.withLock { throttledCount } }
    /// Datagrams dropped for being longer than a frame.
    public var oversized: Int { socket.oversized }

    /// Takes a token from the address's bucket; false when it is empty.
    private func admitRate(_ address: UDPAddress) -> Bool {
        let now = ContinuousClock.now
        return lock.withLock {
            let rate = Double(options.perAddressRate), burst = Double(options.perAddressBurst)
            var b = buckets[address] ?? (burst, now)
            let elapsed = now - b.at
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            b = (min(burst, b.tokens + seconds * rate), now)
            guard b.tokens >= 1 else {
                buckets[address] = b
                throttledCount += 1
                return false
            }
            b.tokens -= 1
            // The table of senders is bounded too: those whose bucket has refilled
            // (idle a while) go; if none has, the one idle longest.
            if buckets[address] == nil, buckets.count >= 4_096 {
                buckets = buckets.filter { _, v in
                    let idle = now - v.at
                    return v.tokens + (Double(idle.components.seconds) + Double(idle.components.attoseconds) / 1e18) * rate < burst
                }
                if buckets.count >= 4_096, let oldest = buckets.min(by: { $0.value.at < $1.value.at })?.key { buckets[oldest] = nil }
            }
            buckets[address] = b
            return true
        }
    }

    public func start() async throws {
        for address in options.peers { admit(address) }
        // A frame, plus the 4-byte tag of a Stately packet.
        let datagrams = socket.datagrams(maxSize: options.maxFrame + Channel.statelyTag.count)
        let tasks = [
            Task { [weak self] in
                for await (from, bytes) in datagrams {
                    guard let self else { return }
                    self.handle(bytes, from: from)
                }
            },
            // Hellos: now, then every 16 s on the rendezvous ports and to linked peers (a
            // newcomer's own hellos find us, and our answer goes at once); every 2 s while an
            // explicit peer is not linked yet, or the LAN (opt-in) has found nobody.
            Task { [weak self] in
                let slow = Duration.milliseconds(Discovery.helloInterval * UInt64(Discovery.idleHelloEvery))
                var lastRendezvous: ContinuousClock.Instant?
                while !Task.isCancelled {
                    guard let self else { return }
                    let now = ContinuousClock.now
                    let rendezvous = lastRendezvous.map { now - $0 >= slow - .milliseconds(100) } ?? true
                    if rendezvous { lastRendezvous = now }
                    let waiting = self.sendHellos(rendezvous: rendezvous)
                    try? await Task.sleep(for: waiting ? .milliseconds(Discovery.helloInterval) : slow)
                }
            },
        ] + (lanSocket.map { lan in
            let hellos = lan.datagrams()
            return [Task { [weak self] in
                for await (from, bytes) in hellos where Discovery.isHello(bytes) {
                    guard let self else { return }
                    self.handle(bytes, from: from)
                }
            }]
        } ?? [])
        lock.withLock { self.tasks = tasks }
    }

    /// Says hello where it is due; whether something still waits for an answer
    /// (an explicit peer not linked, or the LAN with no link): then the next round is in 2 s.
    private func sendHellos(rendezvous: Bool) -> Bool {
        let hello = Discovery.hello(from: localPeer)
        var to: [UDPAddress] = []
        if options.discovery, rendezvous {
            to += Discovery.rendezvousPorts.filter { $0 != port }.map { .loopback($0) }
        }
        let unlinked = options.peers.filter { isLinked($0) == nil }
        to += rendezvous ? options.peers : unlinked
        let alone = linkCount == 0
        if options.lan, rendezvous || alone { to.append(Discovery.lanGroup) }
        for a in to { sayHello(hello, to: a) }
        return !unlinked.isEmpty || (options.lan && alone)
    }

    private func sayHello(_ hello: [UInt8], to address: UDPAddress) {
        let now = ContinuousClock.now
        lock.withLock {
            if saidHello.count >= 256 { saidHello = saidHello.filter { now - $0.value < .seconds(2) } }
            if saidHello[address] != nil || saidHello.count < 256 { saidHello[address] = now }
        }
        socket.send(hello, to: address)
    }

    /// Whether we said hello to `address` within the last 2 s.
    private func saidHelloLately(to address: UDPAddress) -> Bool {
        let now = ContinuousClock.now
        return lock.withLock { saidHello[address].map { now - $0 < .seconds(2) } ?? false }
    }

    /// Links an address (if there is room); returns its key, nil when full.
    @discardableResult
    private func admit(_ address: UDPAddress) -> String? {
        let key = address.description
        let new: Bool? = lock.withLock {
            if links[key] != nil { return false }
            guard links.count < options.maxLinks else { return nil }
            links[key] = address
            return true
        }
        guard let new else { return nil }
        if new { continuation.yield(.up(key, maxFrame: options.maxFrame)) }
        return key
    }

    private func isLinked(_ address: UDPAddress) -> String? {
        let key = address.description
        return lock.withLock { links[key] != nil } ? key : nil
    }

    private func handle(_ bytes: [UInt8], from address: UDPAddress) {
        guard admitRate(address) else { return }
        switch Channel.of(bytes) {
        case .hello:
            guard let from = Discovery.parseHello(bytes), from != localPeer else { return } // our own, looped back
            if let key = admit(address) {
                continuation.yield(.heard(key))
                // Answered at once (a newcomer, or a peer that restarted on its old port),
                // unless we said hello to it within 2 s (its hello is then our answer).
                if !saidHelloLately(to: address) { sayHello(Discovery.hello(from: localPeer), to: address) }
            }
        case .stately:
            let packet = Channel.statelyPacket(bytes)
            guard let key = isLinked(address) ?? ((try? StatePacket(decoding: packet)) != nil ? admit(address) : nil) else {
                lock.withLock { refusedCount += 1 }
                return
            }
            continuation.yield(.frame(key, packet, .stately))
        case .bitchat:
            // A bitchat packet from an address we have no link with yet starts one
            // (any bitchat implementation can talk to us); junk does not.
            guard let key = isLinked(address) ?? ((try? Packet(decoding: bytes)) != nil ? admit(address) : nil) else {
                lock.withLock { refusedCount += 1 }
                return
            }
            continuation.yield(.frame(key, bytes, .mesh))
        }
    }

    public func send(_ frame: [UInt8], on channel: FrameChannel, to keys: [String]) {
        let addresses = lock.withLock { keys.compactMap { links[$0] } }
        let datagram = channel == .stately ? Channel.stately(frame) : frame
        for a in addresses { socket.send(datagram, to: a) }
    }

    public func close(_ key: String) async {
        guard lock.withLock({ links.removeValue(forKey: key) }) != nil else { return }
        continuation.yield(.down(key))
    }

    public func stop() async {
        let tasks = lock.withLock { self.tasks }
        for t in tasks { t.cancel() }
        socket.close()
        lanSocket?.close()
        continuation.finish()
    }
}
