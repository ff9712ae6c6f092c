// The embedding example in README.md, byte for byte between the markers
// (ReadmeExampleTests holds the two together and runs it).
// README example: begin
import Starling

/// Joins the mesh, greets the first peer that appears (end-to-end encrypted),
/// and returns the first private message it receives, once its own greeting
/// is delivered.
func greeter(_ options: MeshNode.Options) async throws -> String? {
    let node = try MeshNode(identity: .generate(), options: options)
    let running = Task { await node.run() }
    var greeted = false, delivered = false, heard: String?
    for await event in node.events {
        switch event {
        case let .peer(id, nickname, _) where !greeted:
            try await node.sendPrivate("hello \(nickname)!", to: id)
            greeted = true
        case let .privateMessage(_, nickname, text, _, _, _):
            heard = heard ?? "\(nickname ?? "someone"): \(text)"
        case .delivered:
            delivered = true
        default:
            break
        }
        if delivered && heard != nil { await node.stop() }
    }
    await running.value
    return heard
}
// README example: end
