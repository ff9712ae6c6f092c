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
