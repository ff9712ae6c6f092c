import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingWire

/// Stately as a part of the node (seed 000; docs/PROTOCOL.md, "Stately"):
/// our status and SOS, the states around us, and the power mode, on a channel
/// of their own beside the mesh (``FrameChannel/stately``). The
/// ``StatelyEngine`` does the work; this part wires it to the node's links and
/// leaves out blocked peers' states.
struct StatelyFeature: NodeFeature {
    var engine: StatelyEngine

    init(identity: Identity, configuration: NodeCore.Configuration, seed: UInt64) {
        var stately = StatelyEngine.Configuration(name: StateReport.clip(configuration.nickname))
        stately.key = configuration.stateKey
        engine = StatelyEngine(senderID: identity.peerID, configuration: stately, seed: seed,
                               nonce: { (0..<12).map { _ in UInt8.random(in: 0...255) } })
        engine.setOverride(configuration.powerMode, now: 0)
    }

    var tableSizes: [String: Int] { engine.tableSizes }
    var nextDeadline: Millis? { engine.nextDeadline }

    mutating func tick(_ context: inout NodeContext) { perform(engine.tick(now: context.now), &context) }
    mutating func linkUp(_ link: LinkID, context: inout NodeContext) { perform(engine.linkUp(link), &context) }
    mutating func receive(_ frame: [UInt8], on link: LinkID, context: inout NodeContext) {
        perform(engine.receive(frame, on: link, now: context.now), &context)
    }
    mutating func set(_ state: StateKind, context: inout NodeContext) { perform(engine.set(state, now: context.now), &context) }
    mutating func clearSOS(_ context: inout NodeContext) { perform(engine.clearSOS(now: context.now), &context) }

    private func perform(_ actions: [StatelyEngine.Action], _ context: inout NodeContext) {
        for action in actions {
            switch action {
            case let .transmit(bytes, links):
                context.output(.send(bytes, channel: .stately, links: links))
            case let .updated(state):
                if !context.isBlocked(state.senderID) { context.emit(.state(state)) }
            case let .sos(state):
                if !context.isBlocked(state.senderID) { context.emit(.sos(state)) }
            case let .expired(peer):
                context.emit(.stateExpired(peer))
            case let .rejected(why):
                context.emit(.rejected(Rejection(.stately, why)))
            }
        }
    }
}
