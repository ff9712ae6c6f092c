import Crypto
import StarlingCrypto
import StarlingWire

/// A group's state as the network may show it: no key (docs/PROTOCOL.md, "Groups").
public struct GroupSummary: Hashable, Sendable, Codable {
    public struct Member: Hashable, Sendable, Codable {
        public var fingerprint: String
        public var nickname: String
        public init(fingerprint: String, nickname: String) {
            self.fingerprint = fingerprint
            self.nickname = nickname
        }
    }

    public var groupID: String
    public var name: String
    public var epoch: UInt32
    public var members: [Member]
    public var creator: String

    public init(groupID: String, name: String, epoch: UInt32, members: [Member], creator: String) {
        self.groupID = groupID
        self.name = name
        self.epoch = epoch
        self.members = members
        self.creator = creator
    }

    public init(_ s: GroupState) {
        self.init(groupID: s.groupID.hexString, name: s.name, epoch: s.epoch,
                  members: s.members.map { Member(fingerprint: $0.fingerprint.hexString, nickname: $0.nickname) },
                  creator: s.creatorFingerprint.hexString)
    }
}

/// A group message opened and checked: its sender a member of the roster of
/// the epoch it was sealed in.
public struct GroupMessage: Hashable, Sendable {
    public var group: GroupSummary
    public var messageID: String
    /// The sender's fingerprint (hex) and their name as the roster gives it
    /// (the creator's word, not the sender's claim).
    public var sender: String
    public var nickname: String
    public var text: String
    /// The sender's signed time, never later than ours.
    public var timestamp: UInt64
    /// The packet's hop count, and whether a sync answer replayed it.
    public var hops: Int
    public var history: Bool

    public init(group: GroupSummary, messageID: String, sender: String, nickname: String, text: String, timestamp: UInt64,
                hops: Int, history: Bool) {
        self.group = group
        self.messageID = messageID
        self.sender = sender
        self.nickname = nickname
        self.text = text
        self.timestamp = timestamp
        self.hops = hops
        self.history = history
    }
}

/// The private groups a node belongs to, and the group message packets it
/// keeps for gossip sync (docs/PROTOCOL.md, "Groups"). The rules are iOS 1.7's
/// (bitchat ChatGroupCoordinator.swift), with Android's departure epochs and
/// bounds iOS lacks. Plain value: states, packets and wall-clock time in,
/// outcomes out.
public struct GroupTable: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// Groups this node belongs to; an invite past it is refused.
        public var maxGroups = 64
        /// Of those, made by one creator (beyond iOS: one stranger cannot fill them all).
        public var maxGroupsPerCreator = 4
        /// Groups left, remembered so that a stale state does not add them back (the oldest goes).
        public var maxDeparted = 64
        /// Group message packets kept for sync (iOS: 200), the oldest going first.
        public var maxPackets = 200
        /// Of those, from one sender ID (beyond iOS: one flooder cannot take them all).
        public var maxPacketsPerSender = 50
        /// How long a packet is kept and offered (iOS: 6 hours), ms.
        public var packetRetention: UInt64 = 21_600_000
        /// Message IDs shown, per group and in all, so that a copy is shown once.
        public var maxSeen = 4_096
        public init() {}
    }

    public var configuration: Configuration
    /// The groups we belong to, by group ID: their state, key included.
    public private(set) var groups: [[UInt8]: GroupState] = [:]
    /// Groups left: the epoch we left at, oldest first.
    public private(set) var departed: [(id: [UInt8], epoch: UInt32)] = []
    private var packets: [(id: PacketID, packet: Packet)] = []
    /// Kept packets that opened for us (a member's real message): evicted
    /// last, so that junk under a claimed sender ID cannot push them out.
    private var read: Set<PacketID> = []
    private var seen: Set<[UInt8]> = []
    private var seenOrder: [[UInt8]] = []

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    public var packetCount: Int { packets.count }
    public var shownCount: Int { seen.count }

    // MARK: States

    public enum StateOutcome: Hashable, Sendable {
        /// A group we were not in: we are now (iOS asks nothing).
        case joined(GroupState)
        /// A new epoch or roster of a group we are in.
        case updated(GroupState)
        /// A state that leaves us out of a group we were in: it is gone, with its key.
        case removed(GroupState)
        /// The very state held (sent again): nothing changes.
        case unchanged
        /// Not taken, for this reason (in words).
        case refused(String)
    }

    /// A state that came over the Noise session of `peer` (their fingerprint),
    /// as an invite (0x06) or a key update (0x07). Taken only from the group's
    /// creator, signed by them, with the epoch never going back; a group we left
    /// comes back only by an invite of a later epoch.
    public mutating func take(_ state: GroupState, invite: Bool, from peer: Fingerprint, me: Fingerprint) -> StateOutcome {
        guard peer.bytes == state.creatorFingerprint else { return .refused("a group's state comes from its creator only") }
        guard GroupSealing.isValid(state) else { return .refused("the state is not signed by the creator its roster names") }
        let id = state.groupID
        let held = groups[id]
        // The group's ID is in the clear in every message: another "creator" of a group we hold is a takeover.
        if let held, held.creatorFingerprint != state.creatorFingerprint { return .refused("a state of a group we hold, from another creator") }
        if let held, state.epoch < held.epoch { return .refused("epoch \(state.epoch) is older than the \(held.epoch) held") }
        if held == state { return .unchanged }
        guard state.members.contains(where: { $0.fingerprint == me.bytes }) else {
            guard let held else { return .refused("a state of a group we are not in") }
            groups[id] = nil
            depart(id, epoch: state.epoch)
            return .removed(held)
        }
        if held == nil {
            if let left = departed.first(where: { $0.id == id }) {
                guard invite, state.epoch > left.epoch else { return .refused("a group we left comes back only by a new invite") }
                departed.removeAll { $0.id == id }
            }
            guard groups.count < configuration.maxGroups else { return .refused("already in \(configuration.maxGroups) groups") }
            guard groups.values.filter({ $0.creatorFingerprint == state.creatorFingerprint }).count < configuration.maxGroupsPerCreator else {
                return .refused("already in \(configuration.maxGroupsPerCreator) groups of this creator")
            }
            groups[id] = state
            return .joined(state)
        }
        groups[id] = state
        return .updated(state)
    }

    /// Keeps a group we made or are in as it is now (creating, or the creator's own change).
    public mutating func set(_ state: GroupState) { groups[state.groupID] = state }

    /// Leaves a group: forgotten with its key, remembered as left.
    @discardableResult
    public mutating func leave(_ id: [UInt8]) -> GroupState? {
        guard let held = groups.removeValue(forKey: id) else { return nil }
        depart(id, epoch: held.epoch)
        return held
    }

    /// Restores what was kept (the messenger's store): groups and groups left.
    /// What is held now wins over what the store kept (a change made while it
    /// was locked): a kept state is taken only for a group not held, not left
    /// since at its epoch or later, or at a later epoch than the one held.
    public mutating func restore(_ states: [GroupState], departed left: [(id: [UInt8], epoch: UInt32)]) {
        for s in states where GroupSealing.isValid(s) {
            if let held = groups[s.groupID], held.epoch >= s.epoch || held.creatorFingerprint != s.creatorFingerprint { continue }
            if let gone = departed.first(where: { $0.id == s.groupID }), gone.epoch >= s.epoch { continue }
            guard groups[s.groupID] != nil || groups.count < configuration.maxGroups else { continue }
            groups[s.groupID] = s
        }
        for l in left where groups[l.id] == nil && !departed.contains(where: { $0.id == l.id }) { depart(l.id, epoch: l.epoch) }
    }

    private mutating func depart(_ id: [UInt8], epoch: UInt32) {
        departed.removeAll { $0.id == id }
        departed.append((id, epoch))
        if departed.count > configuration.maxDeparted { departed.removeFirst(departed.count - configuration.maxDeparted) }
    }

    // MARK: Messages

    public enum OpenOutcome: Hashable, Sendable {
        case message(GroupState, GroupMessageBody, member: GroupMember)
        /// Not for us, or not readable: a group we are not in, another epoch.
        case notOurs
        /// Ours, and refused for this reason.
        case refused(String)
        /// A copy of one already shown, or our own.
        case duplicate
    }

    /// Opens a group message packet's envelope with the key of its group's
    /// epoch (only the epoch held: iOS keeps no other) and checks that its
    /// signer is in the roster.
    public mutating func open(_ envelope: GroupEnvelope, mySigningKey: [UInt8]) -> OpenOutcome {
        guard let state = groups[envelope.groupID], envelope.epoch == state.epoch else { return .notOurs }
        let body: GroupMessageBody
        do { body = try GroupSealing.open(envelope, key: state.key) } catch { return .refused(error.description) }
        guard let member = state.members.first(where: { $0.signingKey == body.senderSigningKey }) else {
            return .refused("signed by a key no member of the group has")
        }
        if body.senderSigningKey == mySigningKey { return .duplicate }
        let mark = envelope.groupID + Array(body.messageID.utf8)
        guard seen.insert(mark).inserted else { return .duplicate }
        seenOrder.append(mark)
        if seenOrder.count > configuration.maxSeen { seen.remove(seenOrder.removeFirst()) }
        return .message(state, body, member: member)
    }

    /// Marks one of our own messages as shown (its echo is not shown again).
    public mutating func markSent(_ groupID: [UInt8], messageID: String) {
        let mark = groupID + Array(messageID.utf8)
        if seen.insert(mark).inserted {
            seenOrder.append(mark)
            if seenOrder.count > configuration.maxSeen { seen.remove(seenOrder.removeFirst()) }
        }
    }

    // MARK: Packets for sync

    /// Keeps a group message packet for gossip sync (whether or not we can
    /// read it, as iOS does): false when held already or too old.
    public mutating func keep(_ packet: Packet, now: UInt64) -> Bool {
        prune(now: now)
        // Not from the future (it would never age out), and an envelope at least.
        guard packet.timestamp <= now + 120_000, (try? GroupEnvelope(decoding: packet.payload[...])) != nil else { return false }
        guard now < packet.timestamp || now - packet.timestamp < configuration.packetRetention else { return false }
        let id = PacketID(packet)
        guard !packets.contains(where: { $0.id == id }) else { return false }
        // The sender ID is a claim (the packet is unsigned): past its share, that
        // ID's oldest packet we could not read goes first, one we read last.
        let sender = packets.indices.filter { packets[$0].packet.senderID == packet.senderID }
        if sender.count >= configuration.maxPacketsPerSender, let i = sender.first(where: { !read.contains(packets[$0].id) }) ?? sender.first {
            read.remove(packets.remove(at: i).id)
        }
        packets.append((id, packet))
        packets.sort { ($0.packet.timestamp, $0.id.high) < ($1.packet.timestamp, $1.id.high) }
        while packets.count > configuration.maxPackets {
            let i = packets.firstIndex { !read.contains($0.id) } ?? 0
            read.remove(packets.remove(at: i).id)
        }
        return true
    }

    /// A kept packet opened for us: kept before the ones we cannot read.
    public mutating func markRead(_ id: PacketID) {
        if packets.contains(where: { $0.id == id }) { read.insert(id) }
    }

    public mutating func prune(now: UInt64) {
        let before = packets.count
        packets.removeAll { now > $0.packet.timestamp && now - $0.packet.timestamp >= configuration.packetRetention }
        if packets.count != before, !read.isEmpty { read = read.intersection(packets.map(\.id)) }
    }

    /// The packets kept of one group at one epoch (to read them once its key comes).
    public func packets(of groupID: [UInt8], epoch: UInt32) -> [Packet] {
        packets.map(\.packet).filter { p in
            (try? GroupEnvelope(decoding: p.payload[...])).map { $0.groupID == groupID && $0.epoch == epoch } ?? false
        }
    }

    /// What sync offers, newest first.
    public func syncPackets() -> [Packet] { packets.reversed().map(\.packet) }

    /// A new random 32-byte key (each epoch's, as iOS makes it).
    static func randomKey() -> [UInt8] { SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) } }
}
