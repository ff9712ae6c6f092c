import StarlingCrypto
import StarlingMessengerCore
import StarlingWire
import StarlingYaOK
import Testing

/// Issue 54, item 4: a typed name means one thing in every face, by one set of
/// rules (`Names`); several matches are never chosen between silently.
@Suite struct NamesTests {
    @Test func aPeerByItsNicknameOrItsNameAndDigits() {
        let bob1 = PeerID(rawValue: 0xfde2_0000_0000_0001), bob2 = PeerID(rawValue: 0x7e6b_0000_0000_0002)
        let carol = PeerID(rawValue: 0x1234_0000_0000_0003)
        let peers = [bob1: "bob", bob2: "bob", carol: "carol"]
        #expect(Names.peer("carol", among: peers, nickname: { $0 }) == .one(carol))
        // Two bobs: both said, in one order, each as it can be typed; neither picked.
        #expect(Names.peer("bob", among: peers, nickname: { $0 }) == .several([bob2, bob1]))
        #expect(Names.label("bob", peer: bob1) == "bob#fde2")
        #expect(Names.peer("bob#fde2", among: peers, nickname: { $0 }) == .one(bob1))
        #expect(Names.peer("bob#7e6b", among: peers, nickname: { $0 }) == .one(bob2))
        // Nicknames are exact (an announce's name is the peer's own); too few digits pick nothing.
        #expect(Names.peer("Bob", among: peers, nickname: { $0 }) == .none)
        #expect(Names.peer("bob#fd", among: peers, nickname: { $0 }) == .none)
        #expect(Names.peer("dave", among: peers, nickname: { $0 }) == .none)
    }

    @Test func aContactByNameNameAndDigitsOrItsUserID() throws {
        let a = try ContactCard(identity: Identity.generate(), userID: .random(), displayName: "Bob")
        let b = try ContactCard(identity: Identity.generate(), userID: .random(), displayName: "bob")
        let c = try ContactCard(identity: Identity.generate(), userID: .random(), displayName: "Carol")
        let all = [a, b, c]
        #expect(Names.contact("carol", among: all, card: { $0 }) == .one(c), "any case")
        guard case let .several(bobs) = Names.contact("BOB", among: all, card: { $0 }) else {
            Issue.record("two contacts called bob are both said")
            return
        }
        #expect(Set(bobs.map(\.userID)) == [a.userID, b.userID])
        #expect(Names.contact(Names.label(a), among: all, card: { $0 }) == .one(a), "its label picks it: \(Names.label(a))")
        let digits = String(c.userID.description.prefix(6))
        #expect(Names.contact(digits, among: all, card: { $0 }) == .one(c), "the start of its user ID")
        #expect(Names.contact(String(digits.prefix(3)), among: all, card: { $0 }) == .none, "three digits are too few")
        #expect(Names.contact("dave", among: all, card: { $0 }) == .none)
    }

    @Test func aGroupByNameOrTheStartOfItsID() {
        let groups = [("Family", "a1b2c3d4e5f6"), ("family", "0f0f0f0f0f0f"), ("Work", "a1b2ffff0000")]
        #expect(Names.group("work", among: groups, groupName: \.0, groupID: \.1).one?.1 == "a1b2ffff0000")
        guard case let .several(two) = Names.group("FAMILY", among: groups, groupName: \.0, groupID: \.1) else {
            Issue.record("two groups called family are both said")
            return
        }
        #expect(two.count == 2)
        #expect(Names.group("0f0f", among: groups, groupName: \.0, groupID: \.1).one?.0 == "family")
        if case let .several(both) = Names.group("a1b2", among: groups, groupName: \.0, groupID: \.1) {
            #expect(both.count == 2, "a start two IDs share names neither")
        } else {
            Issue.record("a1b2 starts two IDs")
        }
        #expect(Names.group("", among: groups, groupName: \.0, groupID: \.1).one == nil)
    }
}
