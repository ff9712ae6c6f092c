import StarlingMesh
import StarlingWire

/// What broken or hostile neighbours can do to one router, as a script decoded
/// from arbitrary bytes, and the router's promises, checked after every step.
/// The router fuzzer (`Fuzz/Sources/fuzz-router`) feeds it libFuzzer's inputs;
/// the tests replay what it found and a few hundred seeded scripts.
///
/// The router is the default one of a node (planned relays, gossip sync, source
/// routes, a hold for a favourite) with small limits, so that the fuzzer
/// reaches them. The promises:
///
/// - no more pending relays than configured;
/// - every frame sent decodes as a packet, goes only on links that are up, and
///   fits each of them (when the packet's own header leaves room for the
///   smallest fragment, see ``Fragmenter/minimumChunkSize``);
/// - nothing received goes back out the link it came in on, except sync answers
///   (TTL 0, isRSR), and what is relayed at once goes with one hop fewer (than
///   it came with, or than the router's own TTL when it came with more);
/// - no packet is delivered twice while the duplicate filter holds it.
///
/// Both the router and its inputs are deterministic: a script that breaks a
/// promise breaks it every time.
public struct HostileInput: Sendable {
    /// A promise the router broke, at a step of the script.
    public struct Violation: Error, Hashable, Sendable, CustomStringConvertible {
        public var step: Int
        public var problem: String
        public var description: String { "step \(step): \(problem)" }
    }

    /// One thing the router is asked to do.
    public enum Step: Hashable, Sendable {
        /// Bytes heard on a link (a packet built from the script, or raw junk).
        case receive(link: Int, bytes: [UInt8])
        /// A packet, split into fragments of `chunk` bytes; those whose bit is
        /// set in `keep` arrive, in order or reversed.
        case receiveFragments(link: Int, packet: Packet, chunk: Int, keep: UInt16, reversed: Bool)
        case originate(Packet, flood: Bool)
        case tick(advance: Millis)
        case linkUp(link: Int, peer: Int?, maxFrame: Int?)
        case linkDown(link: Int)
        case bind(link: Int, peer: Int)
        /// A verified announce's neighbour list (indices into ``peers``; the
        /// local node and the peer itself may be in it).
        case setNeighbors(peer: Int, neighbors: [Int])
        case peerGone(peer: Int)
    }

    /// The peers a script can name; the first is the router's own.
    public static let peers: [PeerID] = (0..<12).map { PeerID(rawValue: 0x5354_4152_0000_0000 | UInt64($0)) }
    public static let linkCount = 6
    /// The frame limits a link can come up with (nil: no limit, as UDP).
    public static let frameLimits: [Int?] = [nil, 185, 244, 512]

    public private(set) var router: MeshRouter
    public private(set) var now: Millis = 1_763_800_000_000
    /// Links up, and their frame limits.
    private var up: [LinkID: Int?] = [:]
    /// When each packet was delivered (packet ID's high half, as the router's filter keys it).
    private var delivered: [UInt64: Millis] = [:]
    private var steps = 0

    public init(policy: any RelayPolicy = defaultRelayPolicy(), seed: UInt64 = 1) {
        var configuration = MeshRouter.Configuration()
        configuration.maxPendingRelays = 8
        var sync = GossipStore.Configuration()
        sync.capacity = 24
        sync.maxReplies = 12
        configuration.sync = sync
        configuration.reassembly.maxInProgress = 4
        configuration.reassembly.maxFragmentsPerMessage = 16
        configuration.reassembly.maxMessageBytes = 4_096
        configuration.favoriteHold.perRecipient = 4
        configuration.favoriteHold.total = 8
        router = MeshRouter(localPeer: Self.peers[0], policy: policy, seed: seed, configuration: configuration)
        router.favorites = [Self.peers[5]]
        // A start the script builds on: three neighbours, and a line behind them.
        for (link, peer) in [(0, 1), (1, 2), (2, 3)] {
            _ = try? apply(.linkUp(link: link, peer: peer, maxFrame: Self.frameLimits[link % Self.frameLimits.count]))
        }
        for (peer, neighbors) in [(1, [0, 2, 4]), (2, [0, 1, 5]), (3, [0, 6]), (4, [1, 7]), (6, [3, 7]), (7, [4, 6])] {
            _ = try? apply(.setNeighbors(peer: peer, neighbors: neighbors))
        }
        steps = 0
    }

    /// Runs a script decoded from `bytes`; the first promise broken, if any.
    public static func run(_ bytes: [UInt8], policy: any RelayPolicy = defaultRelayPolicy()) -> Violation? {
        var input = HostileInput(policy: policy)
        for step in script(from: bytes, startingAt: input.now) {
            do { try input.apply(step) } catch { return error }
        }
        return nil
    }

    // MARK: Running

    /// Applies one step and checks the router's promises.
    public mutating func apply(_ step: Step) throws(Violation) {
        steps += 1
        switch step {
        case let .receive(link, bytes):
            let id = LinkID(UInt32(link))
            guard up[id] != nil else { return }
            try check(router.receive(bytes, on: id, now: now), incoming: id, received: try? Packet(decoding: bytes))
        case let .receiveFragments(link, packet, chunk, keep, reversed):
            let id = LinkID(UInt32(link))
            guard up[id] != nil,
                  var pieces = try? Fragmenter.fragment(packet, chunkSize: chunk, fragmentID: UInt64(keep) << 8 | UInt64(chunk))
            else { return }
            if reversed { pieces.reverse() }
            for (i, piece) in pieces.enumerated() where keep & (1 << (i % 16)) != 0 {
                guard let bytes = try? piece.encoded() else { continue }
                try check(router.receive(bytes, on: id, now: now), incoming: id, received: piece)
            }
        case let .originate(packet, flood):
            try check(router.originate(packet, now: now, routing: flood ? .flood : .automatic), incoming: nil)
        case let .tick(advance):
            now += advance
            try check(router.tick(now: now), incoming: nil)
        case let .linkUp(link, peer, maxFrame):
            let id = LinkID(UInt32(link))
            up[id] = .some(maxFrame)
            try check(router.linkUp(id, peer: peer.map { Self.peers[$0] }, maxFrame: maxFrame, now: now), incoming: nil)
        case let .linkDown(link):
            let id = LinkID(UInt32(link))
            up[id] = nil
            router.linkDown(id)
        case let .bind(link, peer):
            try check(router.bind(LinkID(UInt32(link)), to: Self.peers[peer], now: now), incoming: nil)
        case let .setNeighbors(peer, neighbors):
            router.setNeighbors(of: Self.peers[peer], Set(neighbors.map { Self.peers[$0] }), now: now)
        case let .peerGone(peer):
            router.peerGone(Self.peers[peer])
        }
        try expect(router.pendingRelayCount <= router.configuration.maxPendingRelays,
                   "\(router.pendingRelayCount) pending relays, at most \(router.configuration.maxPendingRelays) allowed")
    }

    /// Checks what the router gave back for one step.
    /// `received` is the packet heard on `incoming`, when the step was one.
    public mutating func check(_ actions: [MeshRouter.Action], incoming: LinkID?, received: Packet? = nil)
        throws(Violation)
    {
        let receivedID = received.map(PacketID.init)
        for action in actions {
            switch action {
            case let .transmit(bytes, links):
                try expect(!links.isEmpty, "a transmission on no link")
                let packet: Packet
                do { packet = try Packet(decoding: bytes) } catch {
                    throw Violation(step: steps, problem: "sent \(bytes.count) bytes that do not decode: \(error)")
                }
                for link in links {
                    guard let limit = up[link] else { throw Violation(step: steps, problem: "sent on \(link), which is down") }
                    if let limit, bytes.count > limit, packet.type != .fragment || Self.roomForFragments(packet, limit) {
                        throw Violation(step: steps, problem: "a \(bytes.count)-byte \(packet.type) frame on \(link), whose limit is \(limit)")
                    }
                }
                if let received, PacketID(packet) == receivedID, !received.isSyncAnswer {
                    // Relayed at once: one hop fewer (a sync repair is spread on with a full TTL).
                    let most = min(received.ttl, router.configuration.maxTTL)
                    try expect(packet.ttl < most, "relayed with TTL \(packet.ttl), received with \(received.ttl)")
                }
                if let incoming, links.contains(incoming) {
                    try expect(packet.isSyncAnswer, "a \(packet.type) (TTL \(packet.ttl)) went back out \(incoming), where it came from")
                }
            case let .deliver(packet, _, _):
                let key = PacketID(packet).high
                if let then = delivered[key] {
                    try expect(now - then >= router.configuration.dedupRetention,
                               "\(packet.type) from \(packet.senderID) delivered twice, \(now - then) ms apart")
                }
                delivered[key] = now
            case .progress:
                break
            }
        }
    }

    /// Whether fragments of the original behind `fragment` could fit `limit`:
    /// they cannot when its header and route leave less than the smallest chunk.
    static func roomForFragments(_ fragment: Packet, _ limit: Int) -> Bool {
        Fragmenter.overhead(for: fragment) + Fragmenter.minimumChunkSize <= limit
    }

    private func expect(_ condition: Bool, _ problem: @autoclosure () -> String) throws(Violation) {
        if !condition { throw Violation(step: steps, problem: problem()) }
    }

    // MARK: Decoding a script

    /// Decodes a script: each step starts with a byte whose value mod 10 picks
    /// it; missing bytes read as zero, so every byte string is a script.
    public static func script(from bytes: [UInt8], startingAt start: Millis = 1_763_800_000_000) -> [Step] {
        var r = Cursor(bytes: bytes)
        var steps: [Step] = []
        var clock = start
        while !r.atEnd, steps.count < 512 {
            switch r.u8() % 10 {
            case 0:
                steps.append(.receive(link: r.link(), bytes: r.bytes(r.length())))
            case 1, 2:
                steps.append(.receive(link: r.link(), bytes: (try? packet(&r, now: clock).encoded()) ?? []))
            case 3:
                steps.append(.receiveFragments(link: r.link(), packet: packet(&r, now: clock), chunk: 16 + Int(r.u8()),
                                               keep: r.u16(), reversed: r.u8() & 1 == 1))
            case 4:
                steps.append(.originate(packet(&r, now: clock, sender: 0), flood: r.u8() & 1 == 1))
            case 5:
                // Mostly short waits (jitter, repairs), sometimes long ones (sync, expiry).
                let b = r.u16()
                let advance = b & 0x8000 == 0 ? Millis(b % 400) : Millis(b & 0x7FFF) * 20
                clock += advance
                steps.append(.tick(advance: advance))
            case 6:
                let peer = r.u8()
                steps.append(.linkUp(link: r.link(), peer: peer < 0x80 ? Int(peer) % peers.count : nil,
                                     maxFrame: frameLimits[Int(r.u8()) % frameLimits.count]))
            case 7:
                steps.append(r.u8() & 1 == 0 ? .linkDown(link: r.link()) : .bind(link: r.link(), peer: r.peer()))
            case 8:
                let peer = r.peer()
                let mask = r.u16()
                steps.append(.setNeighbors(peer: peer, neighbors: (0..<peers.count).filter { mask & (1 << $0) != 0 }))
            default:
                steps.append(.peerGone(peer: r.peer()))
            }
        }
        return steps
    }

    /// A packet from the script: any type (the known ones most often), any TTL,
    /// a sender and recipient among ``peers``, a route, a signature, and a
    /// payload that is well formed for fragments and sync requests.
    static func packet(_ r: inout Cursor, now: Millis, sender fixedSender: Int? = nil) -> Packet {
        let t = r.u8()
        let type = t < 0xE0 ? MessageType.known[Int(t) % MessageType.known.count] : MessageType(rawValue: t)
        let ttlByte = r.u8()
        let ttl = ttlByte < 0xF0 ? ttlByte % 9 : ttlByte
        let sender = peers[fixedSender ?? r.peer()]
        let to = r.u8()
        let recipient: PeerID? = switch to % 4 {
        case 0: nil
        case 1: .broadcast
        case 2: peers[0]
        default: peers[Int(to / 4) % peers.count]
        }
        let flags = r.u8()
        let route: [PeerID]? = flags & 0x04 == 0 ? nil : (0..<(1 + Int(flags >> 5))).map { _ in peers[r.peer()] }
        let skew = Millis(r.u16()) * 10
        let timestamp = flags & 0x10 == 0 ? now &- skew : now &+ skew
        var payload = r.bytes(r.length())
        switch type {
        case .fragment:
            payload = Fragment(fragmentID: UInt64(r.u8() % 4), index: UInt16(r.u8() % 8), total: UInt16(r.u8() % 8),
                               originalType: .message, data: payload).encoded()
        case .requestSync:
            let filter = GCSFilter(p: r.u8() % 24, m: UInt32(r.u16()) << 8 | UInt32(r.u8()), data: Array(payload.prefix(1_024)))
            payload = (try? RequestSync(filter: filter).encoded()) ?? []
        default:
            break
        }
        return Packet(version: flags & 0x02 == 0 && route == nil ? 1 : 2, type: type, ttl: ttl, timestamp: timestamp, senderID: sender,
                      recipientID: recipient, route: route, isRSR: flags & 0x01 != 0, payload: payload,
                      compress: flags & 0x08 != 0,
                      signature: flags & 0x40 == 0 ? nil : Signature(bytes: [UInt8](repeating: t, count: 64)))
    }

    /// Reads a script's bytes; past the end, zeros.
    struct Cursor {
        let bytes: [UInt8]
        var offset = 0
        var atEnd: Bool { offset >= bytes.count }

        mutating func u8() -> UInt8 {
            defer { offset += 1 }
            return offset < bytes.count ? bytes[offset] : 0
        }

        mutating func u16() -> UInt16 { UInt16(u8()) << 8 | UInt16(u8()) }
        mutating func link() -> Int { Int(u8()) % HostileInput.linkCount }
        mutating func peer() -> Int { Int(u8()) % HostileInput.peers.count }
        /// Mostly short (under 240 bytes), sometimes up to 1,200 (fragments).
        mutating func length() -> Int {
            let n = u8()
            return n < 0xF0 ? Int(n) : Int(u16() % 1_200)
        }

        mutating func bytes(_ count: Int) -> [UInt8] {
            let start = min(offset, bytes.count)
            let end = min(offset + count, bytes.count)
            offset += count
            return Array(bytes[start..<end])
        }
    }
}
