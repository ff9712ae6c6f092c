import StarlingCrypto
import StarlingMessengerCore
import StarlingNode
import StarlingNodeCore
import StarlingWire
import StarlingYaOK

/// Which group a person means: its name (any case) or the first digits of its
/// ID; every face resolves the same way.
public enum GroupChoice {
    public static func choose(_ named: String, among groups: [GroupSummary]) throws(MessengerClientError) -> GroupSummary {
        guard !named.isEmpty else { throw MessengerClientError(.badRequest, "name a group") }
        switch Names.group(named, among: groups, groupName: \.name, groupID: \.groupID) {
        case let .one(group): return group
        case let .several(matching):
            throw MessengerClientError(.conflict, "\(matching.count) groups are called \(named): name one by its ID (\(matching.map { String($0.groupID.prefix(8)) }.joined(separator: ", ")))")
        case .none:
            let known = groups.map(\.name).joined(separator: ", ")
            throw MessengerClientError(.notFound, "this node is in no group \(named)" + (known.isEmpty ? " (in none yet: /group create NAME)" : " (in: \(known))"))
        }
    }

    /// A peer here by ``Names``' rule, to invite.
    static func invitee(_ nickname: String, among peers: [PeerID: NodeCore.PeerInfo]) throws(MessengerClientError) -> PeerID {
        switch Names.peer(nickname, among: peers, nickname: \.nickname) {
        case let .one(peer): return peer
        case let .several(ids):
            throw MessengerClientError(.conflict, "\(ids.count) peers are called \(nickname): say which (\(ids.map { Names.label(nickname, peer: $0) }.joined(separator: ", ")))")
        case .none: throw MessengerClientError(.notFound, "\(nickname) is not here with a verified announce: invite them when they are")
        }
    }

    /// A member of `group` by the roster's nickname (any case).
    public static func member(_ nickname: String, of group: GroupSummary) throws(MessengerClientError) -> GroupSummary.Member {
        let matching = group.members.filter { $0.nickname.lowercased() == nickname.lowercased() }
        guard let m = matching.first else { throw MessengerClientError(.notFound, "\(nickname) is not in \(group.name)") }
        guard matching.count == 1 else { throw MessengerClientError(.conflict, "\(matching.count) members of \(group.name) are called \(nickname)") }
        return m
    }

    static func error(_ e: NodeCore.GroupError) -> MessengerClientError {
        switch e {
        case .unknownGroup, .notMember, .notPresent: MessengerClientError(.notFound, e.description)
        case .notCreator, .creatorStays: MessengerClientError(.forbidden, e.description)
        case .alreadyMember, .full, .tooManyGroups: MessengerClientError(.conflict, e.description)
        case .off: MessengerClientError(.unavailable, e.description)
        case .badName, .empty, .tooLong, .unsendable: MessengerClientError(.badRequest, e.description)
        }
    }
}

extension Messenger {
    /// Sends to a group (by its ID) and keeps the message in the group's conversation.
    public func sendToGroup(_ groupID: String, text: String) async throws(MessengerClientError) -> MessageRecord {
        guard let id = try? [UInt8](hex: groupID) else { throw MessengerClientError(.badRequest, "\(groupID) is not a group ID") }
        let messageID: String
        do { messageID = try await node.sendToGroup(id, text: text) } catch { throw GroupChoice.error(error) }
        return await recordSentToGroup(groupID, text: text, messageID: messageID)
    }
}

extension LocalMessengerClient {
    public func groups() async throws -> [GroupSummary] { await node.groups }

    public func createGroup(_ name: String, members: [String]) async throws -> GroupSummary {
        // Everyone named must be here first: a group is not made half.
        var invitees: [PeerID] = []
        let peers = await node.peers
        for nick in members { invitees.append(try GroupChoice.invitee(nick, among: peers)) }
        let made: GroupSummary
        do { made = try await node.createGroup(named: name) } catch { throw GroupChoice.error(error) }
        let id = try [UInt8](hex: made.groupID)
        for peer in invitees {
            do { try await node.inviteToGroup(id, peer: peer) } catch { throw GroupChoice.error(error) }
        }
        return try GroupChoice.choose(made.groupID, among: await node.groups)
    }

    public func inviteToGroup(_ group: String, member nickname: String) async throws {
        let g = try GroupChoice.choose(group, among: await node.groups)
        let peer = try GroupChoice.invitee(nickname, among: await node.peers)
        do { try await node.inviteToGroup(try [UInt8](hex: g.groupID), peer: peer) } catch let e as NodeCore.GroupError { throw GroupChoice.error(e) }
    }

    public func removeFromGroup(_ group: String, member nickname: String) async throws {
        let g = try GroupChoice.choose(group, among: await node.groups)
        let m = try GroupChoice.member(nickname, of: g)
        guard let f = Fingerprint(hex: m.fingerprint) else { throw MessengerClientError(.failed, "a roster fingerprint that is not one") }
        do { try await node.removeFromGroup(try [UInt8](hex: g.groupID), member: f) } catch let e as NodeCore.GroupError { throw GroupChoice.error(e) }
    }

    public func leaveGroup(_ group: String) async throws {
        let g = try GroupChoice.choose(group, among: await node.groups)
        do { try await node.leaveGroup(try [UInt8](hex: g.groupID)) } catch let e as NodeCore.GroupError { throw GroupChoice.error(e) }
    }

    public func sendToGroup(_ group: String, text: String) async throws -> MessageRecord {
        let g = try GroupChoice.choose(group, among: await node.groups)
        return try await messenger.sendToGroup(g.groupID, text: text)
    }
}
