import StarlingTransport
import StarlingWire

extension Actor {
    /// A task that hands the actor every datagram `socket` receives, with its
    /// sender (the actor decides who speaks for its server: the server's
    /// address may change), while the actor lives and the socket is open.
    nonisolated func receiving(on socket: UDPSocket,
                               _ received: @escaping @Sendable (isolated Self, UDPAddress, [UInt8]) -> Void) -> Task<Void, Never> {
        let datagrams = socket.datagrams(maxSize: ServerPacket.maxDatagram + 1)
        return Task { [weak self] in
            for await (from, bytes) in datagrams {
                guard let self else { return }
                await received(self, from, bytes)
            }
        }
    }
}

extension UDPSocket {
    /// A client's socket for a server: dual stack where the system has IPv6
    /// (a server's name may turn from one family to the other), else IPv4.
    static func forServer() throws -> UDPSocket {
        if let dual = try? UDPSocket(bindTo: .anyIPv6(0)) { return dual }
        return try UDPSocket(bindTo: .any(0))
    }
}

/// A server given by a host name (nil: an address): the name is looked up
/// again when the server stops answering (issue 52: a server that moved was
/// waited for at its old address), at most every 30 s, one lookup at a time.
struct ServerName: Sendable {
    /// The least time between two lookups of the name.
    static let interval: UInt64 = 30_000
    let name: String?
    let lookup: @Sendable (String) -> UDPAddress?
    private var last: UInt64?
    private var underWay = false

    init(_ name: String?, lookup: @escaping @Sendable (String) -> UDPAddress?) {
        self.name = name
        self.lookup = lookup
    }

    /// The name to look up now, marked under way (nil: no name, one under way, or too soon).
    mutating func begin(now: UInt64) -> String? {
        guard let name, !underWay else { return nil }
        if let last, now < last + Self.interval { return nil }
        last = now
        underWay = true
        return name
    }

    mutating func end() { underWay = false }

    /// Looks `text` up off the caller's actor (getaddrinfo blocks), then hands the answer to `then`.
    func resolve(_ text: String, then: @escaping @Sendable (UDPAddress?) async -> Void) {
        let lookup = self.lookup
        Task.detached { await then(lookup(text)) }
    }
}

/// Where a Ya OK server may be (issue 57): one or more "HOST:PORT"
/// (`--server a:41641,b:41641`), each a literal address or a host name with
/// any number of A and AAAA records. The client talks to one address at a
/// time; when the server there is lost (or never answers) it moves to the next
/// (``move()``, round the list), and the names are looked up again, at most
/// every 30 s, one lookup at a time: what they point to now replaces the list.
struct ServerList: Sendable {
    /// The "HOST:PORT" texts, in the order given.
    let entries: [String]
    /// Every address they have, each entry's in turn.
    private(set) var addresses: [UDPAddress]
    private var index = 0
    let lookup: @Sendable (String) -> [UDPAddress]
    private var last: UInt64?
    private var underWay = false

    init(entries: [String], addresses: [UDPAddress], lookup: @escaping @Sendable (String) -> [UDPAddress]) {
        precondition(!addresses.isEmpty, "a server list has an address")
        self.entries = entries
        self.addresses = addresses
        self.lookup = lookup
    }

    var current: UDPAddress { addresses[index] }

    /// The next address (the first after the last).
    mutating func move() -> UDPAddress {
        index = (index + 1) % addresses.count
        return current
    }

    /// Whether any entry is a name (worth looking up again).
    var hasNames: Bool { entries.contains { UDPAddress($0) == nil } }

    /// The entries to look up now, marked under way (nil: no names, one under way, or too soon).
    mutating func begin(now: UInt64) -> [String]? {
        guard hasNames, !underWay else { return nil }
        if let last, now < last + ServerName.interval { return nil }
        last = now
        underWay = true
        return entries
    }

    /// What the names point to now: the list from here on (the current address
    /// kept where it still is; nothing found: the old list stays). Whether the
    /// current address changed.
    mutating func lookedUp(_ found: [UDPAddress]) -> Bool {
        underWay = false
        guard !found.isEmpty else { return false }
        let was = current
        addresses = found
        index = found.firstIndex(of: was) ?? 0
        return current != was
    }

    /// Looks every entry up off the caller's actor (getaddrinfo blocks), then hands the addresses to `then`.
    func resolve(_ texts: [String], then: @escaping @Sendable ([UDPAddress]) async -> Void) {
        let lookup = self.lookup
        Task.detached {
            var all: [UDPAddress] = []
            for text in texts { for a in lookup(text) where !all.contains(a) { all.append(a) } }
            await then(all)
        }
    }
}
