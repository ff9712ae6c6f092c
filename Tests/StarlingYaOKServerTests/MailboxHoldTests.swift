@testable import StarlingYaOKClient
import StarlingWire
import Testing

/// The mailbox holds the server's acknowledgement of each message until the
/// node stored it (issue 37): a table the server's deliveries grow. Flooded:
/// at most 1,024 held, the oldest let go (the server offers it again); a
/// message offered 5 times and never taken is let go.
@Suite struct MailboxHoldTests {
    @Test func aFloodOfDeliveriesHoldsAtMost1024() async {
        let state = YaOKServerTransport.State()
        var ids: [UserID] = []
        for i in 0..<3_000 {
            let id = UserID.random()
            ids.append(id)
            let letGo = await state.hold("m\(i)", id)
            #expect(!letGo)
            #expect(await state.heldCount <= 1_024)
        }
        #expect(await state.heldCount == 1_024)
        #expect(await state.takeHeld("m0") == nil, "the oldest went first")
        #expect(await state.takeHeld("m2999") == ids[2999], "the newest is held")
        #expect(await state.takeHeld("m1976") == ids[1976], "the oldest kept")
        #expect(await state.takeHeld("m1975") == nil)
        // Offered again and again, never stored: let go at the fifth offer.
        let id = UserID.random()
        var offers: [Bool] = []
        for _ in 0..<5 { offers.append(await state.hold("again", id)) }
        #expect(offers == [false, false, false, false, true])
        #expect(await state.takeHeld("again") == nil)
    }
}
