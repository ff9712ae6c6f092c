import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Private groups as a part of the node (docs/PROTOCOL.md, "Groups"): the
/// ``GroupTable`` of groups we are in (their keys and epochs), the group
/// message packets kept for sync (type bit 10), the states sent in Noise
/// sessions (invites 0x06, key updates 0x07), and the removal notices owed to
/// members we removed (64 at most, the oldest going first).
struct GroupsFeature: NodeFeature {
    private(set) var table: GroupTable
    private var removalNotices: [(member: Fingerprint, notice: GroupState)] = []
    private var providedAt: Millis?

    init(configuration: GroupTable.Configuration) {
        table = GroupTable(configuration: configuration)
    }

    var tableSizes: [String: Int] {
        ["node.groups": table.groups.count, "node.groupsLeft": table.departed.count, "node.groupPackets": table.packetCount,
         "node.groupMessagesShown": table.shownCount, "node.groupRemovalNotices": removalNotices.count]
    }

    /// Group messages past 6 hours leave the sync round within a minute.
    mutating func chores(_ context: inout NodeContext) {
        guard context.now >= (providedAt ?? 0) + 60_000 else { return }
        providedAt = context.now
        table.prune(now: context.wall)
        context.provide(.groupMessage, packets: table.syncPackets())
    }

    /// Restores what the messenger's store kept (states are checked again).
    mutating func restore(_ states: [GroupState], left: [(id: [UInt8], epoch: UInt32)]) {
        table.restore(states, departed: left)
    }

    private static func me(_ context: NodeContext) -> GroupMember {
        GroupMember(fingerprint: context.identity.fingerprint.bytes, signingKey: context.identity.signingPublicKey, nickname: context.nickname)
    }

    // MARK: Commands

    /// Makes a group with us alone in it, its creator (epoch 1, a new random
    /// key): nothing goes on the wire until someone is invited.
    mutating func create(named name: String, context: inout NodeContext) throws(NodeCore.GroupError) -> GroupSummary {
        let name = String(name.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard !name.isEmpty, name.count <= GroupWire.maxNameCharacters else { throw .badName }
        guard table.groups.count < table.configuration.maxGroups else { throw .tooManyGroups }
        var id = [UInt8](repeating: 0, count: 16)
        var system = SystemRandomNumberGenerator()
        for i in id.indices { id[i] = system.next() }
        var state = GroupState(groupID: id, name: name, key: GroupTable.randomKey(), epoch: 1, members: [Self.me(context)],
                               creatorFingerprint: context.identity.fingerprint.bytes)
        do { try GroupSealing.sign(&state, with: context.identity.signingKey) } catch { throw .unsendable("\(error)") }
        table.set(state)
        context.emit(.groupChanged(GroupSummary(state), change: .created, by: context.nickname))
        return GroupSummary(state)
    }

    /// Invites a peer here (a verified announce) into a group we made: a new
    /// epoch and key, the state to them as an invite (0x06) and to every other
    /// member as a key update (0x07), each in its Noise session.
    mutating func invite(_ id: [UInt8], peer: PeerID, context: inout NodeContext) throws(NodeCore.GroupError) {
        var state = try own(id, context)
        guard let card = context.card(peer) else { throw .notPresent(peer.description) }
        guard !state.members.contains(where: { $0.fingerprint == card.fingerprint.bytes }) else { throw .alreadyMember(card.nickname) }
        guard state.members.count < GroupWire.maxMembers else { throw .full }
        state.members.append(GroupMember(fingerprint: card.fingerprint.bytes, signingKey: card.signingKey, nickname: card.nickname))
        let invited = card.fingerprint.bytes
        try rotate(&state, context: &context) { $0.fingerprint == invited ? NoisePayload.Kind.groupInvite : NoisePayload.Kind.groupKeyUpdate }
    }

    /// Removes a member from a group we made: a new epoch and key for those
    /// who stay; the one removed is told (a key update signed for the new
    /// roster, with an all-zero key) and cannot read what follows.
    mutating func remove(_ id: [UInt8], member fingerprint: Fingerprint, context: inout NodeContext) throws(NodeCore.GroupError) {
        var state = try own(id, context)
        guard fingerprint.bytes != state.creatorFingerprint else { throw .creatorStays }
        guard let gone = state.members.first(where: { $0.fingerprint == fingerprint.bytes }) else { throw .notMember(fingerprint.hex.prefix(16).description) }
        state.members.removeAll { $0.fingerprint == fingerprint.bytes }
        try rotate(&state, context: &context) { _ in NoisePayload.Kind.groupKeyUpdate }
        var notice = state
        notice.key = [UInt8](repeating: 0, count: 32)
        do { try GroupSealing.sign(&notice, with: context.identity.signingKey) } catch { throw .unsendable("\(error)") }
        send(notice, kind: NoisePayload.Kind.groupKeyUpdate, to: gone, context: &context) // told if reachable; the new key is never theirs
        if let f = Fingerprint(bytes: gone.fingerprint) {
            removalNotices.removeAll { $0.member == f && $0.notice.groupID == id }
            removalNotices.append((f, notice))
            if removalNotices.count > 64 { removalNotices.removeFirst() }
        }
    }

    /// Leaves a group: forgotten here with its key (nothing goes on the wire,
    /// as iOS); a stale state of it will not bring it back, a new invite will.
    mutating func leave(_ id: [UInt8], context: inout NodeContext) throws(NodeCore.GroupError) {
        guard let held = table.leave(id) else { throw .unknownGroup }
        context.emit(.groupChanged(GroupSummary(held), change: .left, by: nil))
    }

    /// Sends a message to a group we belong to: signed, sealed with the key of
    /// its epoch, broadcast in an unsigned 0x25 packet (TTL 7) and kept for sync.
    mutating func send(_ id: [UInt8], text: String, messageID: String, context: inout NodeContext) throws(NodeCore.GroupError) {
        guard let state = table.groups[id] else { throw .unknownGroup }
        guard !text.isEmpty else { throw .empty }
        guard text.count <= 60_000 else { throw .tooLong(text.count) }
        let body = GroupMessageBody(messageID: messageID, senderSigningKey: [], senderNickname: context.nickname, timestamp: context.wall, content: text)
        let packet: Packet
        do {
            let envelope = try GroupSealing.seal(body, groupID: id, epoch: state.epoch, key: state.key, sender: context.identity.signingKey)
            packet = Packet(type: .groupMessage, ttl: 7, timestamp: context.wall, senderID: context.peerID, payload: envelope.encoded(), compress: false)
        } catch { throw .unsendable("\(error)") }
        table.markSent(id, messageID: messageID)
        if table.keep(packet, now: context.wall) { context.provide(.groupMessage, packets: table.syncPackets()) }
        context.originate(packet)
    }

    private func own(_ id: [UInt8], _ context: NodeContext) throws(NodeCore.GroupError) -> GroupState {
        guard let state = table.groups[id] else { throw .unknownGroup }
        guard state.creatorFingerprint == context.identity.fingerprint.bytes else { throw .notCreator }
        return state
    }

    /// A new epoch and key for `state`, signed, kept, and sent to every member
    /// but us (of the payload kind `kind` says).
    private mutating func rotate(_ state: inout GroupState, context: inout NodeContext, kind: (GroupMember) -> UInt8) throws(NodeCore.GroupError) {
        let mine = context.identity.fingerprint.bytes
        state.epoch &+= 1
        state.key = GroupTable.randomKey()
        if let i = state.members.firstIndex(where: { $0.fingerprint == mine }) { state.members[i].nickname = context.nickname }
        do { try GroupSealing.sign(&state, with: context.identity.signingKey) } catch { throw .unsendable("\(error)") }
        table.set(state)
        for m in state.members where m.fingerprint != mine {
            send(state, kind: kind(m), to: m, context: &context) // one unreachable now is sent the state when their session comes
        }
        context.emit(.groupChanged(GroupSummary(state), change: .updated, by: context.nickname))
    }

    /// A group's state (its key inside) goes only into a session that proved
    /// the member's Noise key: never queued for whoever answers a handshake
    /// under their peer ID. Without one, a handshake starts, and the state goes
    /// when it completes (``peerReturned(_:fingerprint:context:)``).
    private func send(_ state: GroupState, kind: UInt8, to member: GroupMember, context: inout NodeContext) {
        guard let f = Fingerprint(bytes: member.fingerprint) else { return }
        let peer = context.peer(with: f) ?? f.peerID
        guard context.sessions.hasSession(with: peer), context.sessions.fingerprint(of: peer) == f else {
            context.startHandshake(with: peer)
            return
        }
        context.sendPrivately(.unknown(type: kind, body: state.encoded()), to: peer)
    }

    // MARK: What comes

    /// A member of a group we made is here again (present anew), or has a new
    /// session with us: they are sent the group's state (as Android does on a
    /// new session), so that one who missed a key update while away, or lost
    /// it with a session in a restart, reads the group again; a member we
    /// removed is sent the removal notice again.
    func peerReturned(_ peer: PeerID, fingerprint: Fingerprint, context: inout NodeContext) {
        let mine = context.identity.fingerprint
        let ours = table.groups.values.contains { $0.creatorFingerprint == mine.bytes && $0.members.contains { $0.fingerprint == fingerprint.bytes } }
            || removalNotices.contains { $0.member == fingerprint }
        guard ours, fingerprint != mine else { return }
        // Only into a session that proved that key (an announce can be replayed; a peer ID claimed).
        guard context.sessions.hasSession(with: peer), context.sessions.fingerprint(of: peer) == fingerprint else {
            context.startHandshake(with: peer)
            return
        }
        for state in table.groups.values where state.creatorFingerprint == mine.bytes {
            guard state.members.contains(where: { $0.fingerprint == fingerprint.bytes }) else { continue }
            context.sendPrivately(.unknown(type: NoisePayload.Kind.groupKeyUpdate, body: state.encoded()), to: peer)
        }
        for (member, notice) in removalNotices where member == fingerprint {
            guard let held = table.groups[notice.groupID], !held.members.contains(where: { $0.fingerprint == member.bytes }) else { continue }
            context.sendPrivately(.unknown(type: NoisePayload.Kind.groupKeyUpdate, body: notice.encoded()), to: peer)
        }
    }

    /// A group state (invite or key update) that came in `sender`'s Noise session.
    mutating func takeState(_ body: [UInt8], invite: Bool, from sender: PeerID, context: inout NodeContext) {
        guard let state = try? GroupState(decoding: body[...]), let from = context.sessions.fingerprint(of: sender) else {
            context.refuse(\.groups)
            return
        }
        switch table.take(state, invite: invite, from: from, me: context.identity.fingerprint) {
        case let .joined(s):
            context.emit(.groupChanged(GroupSummary(s), change: .joined, by: s.creator?.nickname))
            readKept(s, context: &context)
        case let .updated(s):
            context.emit(.groupChanged(GroupSummary(s), change: .updated, by: s.creator?.nickname))
            readKept(s, context: &context)
        case let .removed(s): context.emit(.groupChanged(GroupSummary(s), change: .removed, by: s.creator?.nickname))
        case .unchanged: break
        case let .refused(why):
            context.refuse(\.groups)
            context.emit(.rejected(Rejection(.group, peer: sender, "group state from \(sender): \(why)")))
        }
    }

    /// Messages that came before the trust decisions, or of a group's new
    /// epoch before its key (the key travels in a Noise session, often after
    /// a handshake): read now.
    mutating func readKept(context: inout NodeContext) {
        for state in table.groups.values { readKept(state, context: &context) }
    }

    private mutating func readKept(_ s: GroupState, context: inout NodeContext) {
        for packet in table.packets(of: s.groupID, epoch: s.epoch).sorted(by: { $0.timestamp < $1.timestamp }) {
            show(packet, hops: 1, history: true, context: &context)
        }
    }

    /// A group message packet: kept for sync (whoever can read it), and shown
    /// when it is of a group we are in, at the epoch we hold, signed by a member.
    mutating func take(_ packet: Packet, hops: Int, context: inout NodeContext) {
        if table.keep(packet, now: context.wall) { context.provide(.groupMessage, packets: table.syncPackets()) }
        show(packet, hops: hops, history: packet.isRSR, context: &context)
    }

    private mutating func show(_ packet: Packet, hops: Int, history: Bool, context: inout NodeContext) {
        // Before the trust decisions are loaded nothing is shown (the packet is kept, and read then).
        guard context.trustKnown else { return }
        guard let envelope = try? GroupEnvelope(decoding: packet.payload[...]) else {
            context.refuse(\.groups)
            return
        }
        switch table.open(envelope, mySigningKey: context.identity.signingPublicKey) {
        case let .message(state, body, member):
            table.markRead(PacketID(packet))
            if let f = Fingerprint(bytes: member.fingerprint), context.blocked.contains(f) { return }
            // The roster's name is the creator's word; it names someone we know only
            // when the signing key is the one pinned to that member's Noise key.
            let known = Fingerprint(bytes: member.fingerprint).flatMap { context.pins[$0] } == member.signingKey
            let name = known ? member.nickname : "\(member.nickname)? \(member.signingKey.prefix(4).hexString)"
            context.emit(.groupMessage(GroupMessage(group: GroupSummary(state), messageID: body.messageID, sender: member.fingerprint.hexString,
                                                    nickname: name, text: body.content, timestamp: min(body.timestamp, context.wall),
                                                    hops: hops, history: history)))
        case .refused:
            context.refuse(\.groups)
        case .notOurs, .duplicate:
            break
        }
    }
}
