import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Groups' commands and queries on the node (``GroupsFeature`` holds their state).
extension NodeCore {
    public enum GroupError: Error, Hashable, Sendable, CustomStringConvertible {
        case badName, unknownGroup, notCreator, full, notPresent(String), alreadyMember(String), notMember(String)
        case creatorStays, empty, tooLong(Int), tooManyGroups, unsendable(String), off
        public var description: String {
            switch self {
            case .badName: "a group's name is 1 to \(GroupWire.maxNameCharacters) characters"
            case .unknownGroup: "this node is in no such group"
            case .notCreator: "only the group's creator changes who is in it"
            case .full: "a group has at most \(GroupWire.maxMembers) members"
            case let .notPresent(p): "\(p) is not here with a verified announce: invite them when they are"
            case let .alreadyMember(n): "\(n) is in the group already"
            case let .notMember(n): "\(n) is not in the group"
            case .creatorStays: "the creator cannot be removed (leave the group instead)"
            case .empty: "an empty message is not sent"
            case let .tooLong(n): "a group message is at most 60,000 characters (this is \(n))"
            case .tooManyGroups: "this node is in as many groups as it keeps"
            case let .unsendable(why): "the group message cannot be sealed: \(why)"
            case .off: "this node keeps no groups"
            }
        }
    }

    private var groupTable: GroupTable { groupsFeature?.table ?? GroupTable() }

    /// The groups we belong to, without their keys.
    public var groups: [GroupSummary] { groupTable.groups.values.map(GroupSummary.init).sorted { ($0.name, $0.groupID) < ($1.name, $1.groupID) } }

    /// The groups with their keys and the groups left, as the messenger keeps them.
    public var groupStates: [GroupState] { groupTable.groups.values.sorted { $0.groupID.lexicographicallyPrecedes($1.groupID) } }
    public var groupsLeft: [(id: [UInt8], epoch: UInt32)] { groupTable.departed }

    /// Restores what the messenger's store kept (states are checked again).
    public mutating func restoreGroups(_ states: [GroupState], left: [(id: [UInt8], epoch: UInt32)]) {
        groupsFeature?.restore(states, left: left)
    }

    /// Makes a group with us alone in it, its creator (epoch 1, a new random
    /// key): nothing goes on the wire until someone is invited.
    @discardableResult
    public mutating func createGroup(named name: String, now: Millis) throws(GroupError) -> GroupSummary {
        try usingGroups(now) { (g, c) throws(GroupError) in try g.create(named: name, context: &c) }
    }

    /// Invites a peer here (a verified announce) into a group we made: a new
    /// epoch and key, the state to them as an invite (0x06) and to every other
    /// member as a key update (0x07), each in its Noise session.
    public mutating func inviteToGroup(_ id: [UInt8], peer: PeerID, now: Millis) throws(GroupError) {
        try usingGroups(now) { (g, c) throws(GroupError) in try g.invite(id, peer: peer, context: &c) }
    }

    /// Removes a member from a group we made: a new epoch and key for those
    /// who stay; the one removed is told (a key update signed for the new
    /// roster, with an all-zero key) and cannot read what follows.
    public mutating func removeFromGroup(_ id: [UInt8], member fingerprint: Fingerprint, now: Millis) throws(GroupError) {
        try usingGroups(now) { (g, c) throws(GroupError) in try g.remove(id, member: fingerprint, context: &c) }
    }

    /// Leaves a group: forgotten here with its key (nothing goes on the wire,
    /// as iOS); a stale state of it will not bring it back, a new invite will.
    public mutating func leaveGroup(_ id: [UInt8], now: Millis) throws(GroupError) {
        try usingGroups(now) { (g, c) throws(GroupError) in try g.leave(id, context: &c) }
    }

    /// Sends a message to a group we belong to: signed, sealed with the key of
    /// its epoch, broadcast in an unsigned 0x25 packet (TTL 7) and kept for sync.
    /// Returns its message ID.
    @discardableResult
    public mutating func sendToGroup(_ id: [UInt8], text: String, now: Millis) throws(GroupError) -> String {
        let messageID = newMessageID().uppercased()
        try usingGroups(now) { (g, c) throws(GroupError) in try g.send(id, text: text, messageID: messageID, context: &c) }
        return messageID
    }

    private mutating func usingGroups<R>(_ now: Millis, _ body: (inout GroupsFeature, inout NodeContext) throws(GroupError) -> R) throws(GroupError) -> R {
        guard let result = try using(\.groupsFeature, now: now, body) else { throw .off }
        return result
    }
}
