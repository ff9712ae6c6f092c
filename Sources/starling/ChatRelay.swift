import Foundation
import StarlingCrypto
import StarlingNode
import StarlingRelayClient
import StarlingWire
import StarlingYaOK
import StarlingYaOKRelay
import StarlingYaOKStore

/// The chat's transport router for Ya OK contacts (seed 002 §4.4, §8.1): the
/// mesh first (direct or routed), then the relay server, then the store's
/// queue, retried on the seed's policy (2 s, ×2, at most 60 s apart). What
/// arrives through the relay is stored, acknowledged, shown, and answered
/// with sealed delivered and read receipts.
extension ChatScreen {
    /// The transports in the fallback order (MessageProgress counts them).
    static let meshTransport = 0, relayTransport = 1
    static let relayPolicy = RetryPolicy(maxAttempts: 8)

    func attachRelay(_ client: RelayClient, userID: UserID) {
        relay = client
        relayUserID = userID
    }

    /// Whether the relay can take a message now.
    func relayReady() async -> Bool {
        guard let relay else { return false }
        return await relay.isRegistered
    }

    /// Seals a stored message and hands it to the relay; QUEUED (or not) comes as an event.
    func sendViaRelay(_ record: inout MessageRecord, card: ContactCard, announce: Bool) async {
        guard let relay, let me = relayUserID else { return }
        let now = Date().timeIntervalSince1970
        do {
            let sealed = try SealedMessage.seal(.text(record.text), id: record.id, timestamp: record.timestamp, from: node.identity,
                                                senderID: me, to: card.userID, recipientAgreementKey: card.agreementKey)
            try await relay.send(sealed: sealed)
            try? record.progress?.attempt(on: Self.relayTransport, at: now)
            record.transport = "relay"
            record.transportID = record.id.description
            transportIDs[record.id.description] = (record.id, record.contact)
            outgoing[record.id.description] = (DisplayText.clean(card.displayName), false)
            if announce {
                showOwnPrivate(to: DisplayText.clean(card.displayName), window: DisplayText.clean(card.displayName), text: record.text,
                               id: record.id.description, note: "↻ to the relay")
            }
        } catch {
            say("! not handed to the relay: \(error)")
        }
    }

    /// The chat's clock: pending messages whose turn has come go out by the
    /// best way there is now. At most 50 a look.
    func retryPending() async {
        guard let yaok, relay != nil, await relayReady() else { return }
        let now = Date().timeIntervalSince1970
        let here = await node.peers
        var sent = 0
        for var record in (try? yaok.pendingMessages()) ?? [] where sent < 50 {
            guard let progress = record.progress, (progress.nextAttemptAt ?? 0) <= now,
                  let (_, card) = contacts.first(where: { $0.1.userID == record.contact }) else { continue }
            if let peer = here.first(where: { $0.value.fingerprint == card.meshFingerprint })?.key {
                await send(&record, to: peer) // on the mesh after all: the mesh first
            } else {
                await sendViaRelay(&record, card: card, announce: false)
            }
            try? yaok.updateMessage(record)
            sent += 1
        }
    }

    /// What the relay client says.
    func showRelay(_ event: RelayClient.Event) async {
        let retryable: Bool
        switch event {
        case .failed: retryable = true
        case let .rejected(why, _): retryable = [.rateLimited, .storageFailed, .serverFull, .recipientQueueFull, .messageIDTaken].contains(why)
        default: retryable = false
        }
        switch event {
        case .registered:
            say("* registered with the relay \(relay.map { "\($0.server)" } ?? "")")
            await retryPending()
        case let .queued(id, online):
            relayProgress(id) { p, now in try? p.move(to: .sent, at: now) }
            if let contact = transportIDs[id.description]?.1 { routes[contact] = "relay" }
            showReceipt(id.description, mark: online ? "✓ via the relay (they are online)" : "✓ queued at the relay",
                        plain: "  · \(outgoing[id.description]?.to ?? "") : queued at the relay\(online ? " (they are online)" : "")")
        case let .delivered(id, _):
            // The recipient's device took it from the relay; their sealed receipt says more.
            if let o = outgoing[id.description], !o.delivered {
                showReceipt(id.description, mark: "✓ taken from the relay", plain: "  · to \(o.to): taken from the relay")
            }
        case let .failed(id) where retryable, let .rejected(_, id?) where retryable:
            relayProgress(id) { p, now in try? p.attemptFailed(at: now, policy: Self.relayPolicy, transportCount: 2) }
            showReceipt(id.description, mark: "↻ the relay did not take it; trying again", plain: "  · the relay did not take it; trying again")
        case let .rejected(why, id?):
            relayProgress(id) { p, now in
                try? p.move(to: .retrying, at: now)
                try? p.move(to: .failed, at: now)
            }
            showReceipt(id.description, mark: "✗ the relay refused it: \(why)", plain: "  · the relay refused it: \(why)")
        case let .rejected(why, nil):
            say("! the relay: \(why)")
        case let .message(sender, payload):
            await receiveFromRelay(sender: sender, payload: payload)
        default:
            break
        }
    }

    /// Moves a stored message's progress (a message the relay handled).
    private func relayProgress(_ id: UserID, _ change: (inout MessageProgress, Double) -> Void) {
        guard let yaok, let (recordID, contact) = transportIDs[id.description], var record = try? yaok.message(recordID, contact: contact),
              record.progress != nil else { return }
        change(&record.progress!, Date().timeIntervalSince1970)
        try? yaok.updateMessage(record)
    }

    /// A sealed message from the relay: stored, then acknowledged (not before:
    /// the relay keeps what we have not stored), shown, and receipted.
    private func receiveFromRelay(sender: UserID, payload: [UInt8]) async {
        guard let yaok, let me = relayUserID, let relay, let header = try? SealedMessage.peek(payload) else { return }
        let now = Date().timeIntervalSince1970
        let result: YaOKStore.Received
        do { result = try yaok.receive(sealed: payload, as: me, identity: node.identity, now: now) } catch is SealedMessage.Error {
            // Signed and for us, but unreadable to this version: acknowledged, and said.
            await relay.acknowledge(header.messageID)
            say("! a sealed message through the relay from \(sender) that this version cannot read: dropped")
            return
        } catch {
            return // the store failed: not acknowledged, so the relay offers it again
        }
        await relay.acknowledge(header.messageID)
        switch result {
        case let .message(record):
            guard let (_, card) = contacts.first(where: { $0.1.userID == record.contact }) else { return }
            let name = DisplayText.clean(card.displayName)
            if let screen {
                screen.append(.init(time: FullScreen.clock(record.timestamp), nick: name, text: Self.lines(record.text) + " (via the relay)",
                                    highlight: true), to: name)
                screen.ring()
            } else {
                say("[\(Self.clock(record.timestamp))] <\(name) → you> \(DisplayText.clean(record.text))  · via the relay")
            }
            routes[record.contact] = "relay"
            for body in [SealedBody.delivered(header.messageID), .read(header.messageID)] {
                if let receipt = try? SealedMessage.seal(body, id: .random(), timestamp: UInt64(now * 1000), from: node.identity,
                                                         senderID: me, to: card.userID, recipientAgreementKey: card.agreementKey) {
                    try? await relay.send(sealed: receipt)
                }
            }
        case let .receipt(record):
            guard let state = record.progress?.state else { return }
            let id = record.id.description
            if state == .read {
                outgoing[id]?.delivered = true
                showReceipt(id, mark: "✓✓ read", plain: "  · to \(outgoing[id]?.to ?? ""): read")
            } else if state == .delivered {
                outgoing[id]?.delivered = true
                showReceipt(id, mark: "✓✓", plain: "  · to \(outgoing[id]?.to ?? ""): delivered")
            }
        case let .unknownSender(who):
            say("! a sealed message through the relay from \(who), who is not a contact: dropped")
        case let .refused(incident, alert):
            say("! a sealed message in \(incident.sender)'s name did not verify: dropped" + (alert ? " — more than 3 in a day: check this contact's safety number" : ""))
        case .duplicate:
            break
        }
    }
}
