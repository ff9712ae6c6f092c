import StarlingTransport
import StarlingWire

extension Actor {
    /// A task that hands the actor every datagram `socket` receives, with its
    /// sender (the actor decides who speaks for its server), while the actor
    /// lives and the socket is open.
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

    /// A task that hands the actor every datagram `socket` receives from
    /// `server` (only the server speaks for the server), while the actor
    /// lives and the socket is open.
    nonisolated func receiving(from server: UDPAddress, on socket: UDPSocket,
                               _ received: @escaping @Sendable (isolated Self, [UInt8]) -> Void) -> Task<Void, Never> {
        let datagrams = socket.datagrams(maxSize: ServerPacket.maxDatagram + 1)
        return Task { [weak self] in
            for await (from, bytes) in datagrams where from == server {
                guard let self else { return }
                await received(self, bytes)
            }
        }
    }
}
