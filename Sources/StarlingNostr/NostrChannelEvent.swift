/// What happens in the location channels a node joined, the mesh bridge's cells and the
/// courier drops it follows, and strangers' requests: what the Nostr transport hands the messenger.
public enum NostrChannelEvent: Hashable, Sendable {
    case message(NostrClientCore.ChannelMessage)
    case presence(geohash: String, publicKey: String)
    /// A channel message we sent was not taken by any relay, and why.
    case failed(String)
    /// An event on the mesh bridge's cells (`NostrTransport.followBridge(cells:)`), unchecked.
    case bridge(NostrEvent)
    /// A courier drop for a recipient tag followed (`NostrTransport.followDrops(tags:)`), unchecked.
    case drop(NostrEvent)
    /// A private message from someone who is not a contact: a request (docs/NOSTR.md, "Requests").
    case request(NostrClientCore.StrangerMessage)
}
