import StarlingCrypto
import StarlingMesh
import StarlingWire

/// What neighbours' own announces say of our clock (docs/MESH.md, "Time"):
/// for each link, when it last sent a fresh announce, and when and by how much
/// it last sent a stale one. When most neighbours heard in the last 2 minutes
/// (at least two) sent only stale ones, our clock is the likelier one to be
/// wrong: said once, again after 10 minutes, with the offset they agree on.
/// One entry a link up (forgotten when it goes).
struct ClockWatch: Sendable {
    private var links: [LinkID: (fresh: Millis?, stale: (at: Millis, offset: Int64)?)] = [:]
    private var noticeAt: Millis?

    var count: Int { links.count }
    var isEmpty: Bool { links.isEmpty }

    /// Notes what a neighbour's own announce (one hop: TTL as sent) on a link
    /// up says of its clock. A stale one counts only when it is a well-formed
    /// announce signed by its own key, checked at most every 10 s a link (a
    /// signature check costs ~90 µs).
    mutating func note(_ packet: Packet, on link: LinkID, fresh: Bool, wall: Millis, now: Millis) {
        guard packet.type == .announce, packet.ttl == Announcement.ttl else { return }
        var entry = links[link] ?? (nil, nil)
        if fresh {
            entry.fresh = now
        } else {
            if let last = entry.stale, now < last.at + 10_000 { return }
            guard (try? Announcement.verify(packet, now: packet.timestamp)) != nil else { return }
            entry.stale = (now, Int64(bitPattern: packet.timestamp &- wall))
        }
        links[link] = entry
    }

    /// The notice to give now, if our clock looks wrong (`freshness`: the
    /// node's rule, in the words). Links no longer up are forgotten.
    mutating func check(up: Set<LinkID>, freshness: Millis, now: Millis) -> String? {
        links = links.filter { up.contains($0.key) }
        let heard = links.filter { max($0.value.fresh ?? 0, $0.value.stale?.at ?? 0) + 120_000 >= now }
        let staleOnly = heard.values.compactMap { e -> Int64? in
            guard let s = e.stale, s.at > (e.fresh ?? 0) else { return nil }
            return s.offset
        }.sorted()
        guard heard.count >= 2, staleOnly.count * 2 > heard.count else { return nil }
        if let said = noticeAt, now < said + 600_000 { return nil }
        noticeAt = now
        let median = staleOnly[staleOnly.count / 2]
        let minutes = (median.magnitude + 30_000) / 60_000
        let amount = minutes >= 60 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
        return "this machine's clock looks wrong: \(staleOnly.count) of the \(heard.count) neighbours heard stamp their "
            + "announces about \(amount) \(median > 0 ? "later" : "earlier") than it, and packets more than "
            + "\(freshness / 1000) s off are refused. Set the time (timedatectl, or NTP) and they are taken again."
    }
}
