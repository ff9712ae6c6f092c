import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
private let datagramSocket = Int32(SOCK_DGRAM.rawValue)
private func closeDescriptor(_ fd: Int32) { _ = Glibc.close(fd) }
#elseif canImport(Darwin)
import Darwin
private let datagramSocket = SOCK_DGRAM
private func closeDescriptor(_ fd: Int32) { _ = Darwin.close(fd) }
#endif

/// An IPv4 address and port; or an IPv6 one, for the servers a node talks
/// to (the Ya OK server, the courier mailbox): the mesh's links are IPv4.
public struct UDPAddress: Hashable, Sendable, CustomStringConvertible {
    /// Host address in network byte order, as `in_addr.s_addr` holds it (0 for IPv6).
    public var host: UInt32
    public var port: UInt16
    /// An IPv6 address's 16 bytes; nil for IPv4. An IPv4-mapped one (::ffff:a.b.c.d) is kept as IPv4.
    public private(set) var ipv6: [UInt8]?

    public init(host: UInt32, port: UInt16) {
        self.host = host
        self.port = port
        ipv6 = nil
    }

    public init(ipv6 bytes: [UInt8], port: UInt16) {
        precondition(bytes.count == 16)
        self.port = port
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            host = UInt32(bytes[12]) | UInt32(bytes[13]) << 8 | UInt32(bytes[14]) << 16 | UInt32(bytes[15]) << 24
            ipv6 = nil
        } else {
            host = 0
            ipv6 = bytes
        }
    }

    /// Every IPv6 interface (::), which takes IPv4 too (dual stack).
    public static func anyIPv6(_ port: UInt16) -> UDPAddress { UDPAddress(ipv6: [UInt8](repeating: 0, count: 16), port: port) }

    public static func loopback(_ port: UInt16) -> UDPAddress {
        UDPAddress(host: inet_addr("127.0.0.1"), port: port)
    }

    /// Every interface (0.0.0.0), for `--lan`.
    public static func any(_ port: UInt16) -> UDPAddress {
        UDPAddress(host: 0, port: port)
    }

    /// From "HOST:PORT" with a dotted IPv4 host ("localhost" means 127.0.0.1), or
    /// "[IPv6]:PORT" with an IPv6 literal in brackets ("[::1]:41641").
    public init?(_ text: String) {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let inside = String(text[text.index(after: text.startIndex)..<close]), rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":"), let port = UInt16(rest.dropFirst()) else { return nil }
            var address = in6_addr()
            guard inet_pton(AF_INET6, inside, &address) == 1 else { return nil }
            self.init(ipv6: withUnsafeBytes(of: &address) { Array($0) }, port: port)
            return
        }
        let parts = text.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { return nil }
        let host = parts[0] == "localhost" ? "127.0.0.1" : String(parts[0])
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
        self.init(host: address.s_addr, port: port)
    }

    /// "HOST:PORT" as a person writes it: a host name, a dotted IPv4 address or an
    /// IPv6 one in brackets, and a port 1–65535. Nothing is looked up (see ``resolving(_:)``).
    public static func hostAndPort(_ text: String) -> (host: String, port: UInt16)? {
        if text.hasPrefix("[") {
            guard let literal = UDPAddress(text), literal.ipv6 != nil || text.contains("::ffff:"), literal.port > 0,
                  let close = text.firstIndex(of: "]") else { return nil }
            return (String(text[text.index(after: text.startIndex)..<close]), literal.port)
        }
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        let host = String(text[..<colon])
        // A DNS name: labels of letters, digits and hyphens (or an IPv4 address, which is such a name too).
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard !host.isEmpty, host.utf8.count <= 253, labels.allSatisfy({ label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") }
        }) else { return nil }
        return (host, port)
    }

    /// Why a "HOST:PORT" gives no address.
    public struct ResolutionError: Swift.Error, CustomStringConvertible {
        public var text: String
        public var reason: String
        public var description: String { "\(text): \(reason)" }
        public init(text: String, reason: String) {
            self.text = text
            self.reason = reason
        }
    }

    /// A list of "HOST:PORT" separated by commas (a server at several
    /// addresses, tried in turn: `a.example:41641,b.example:41641`), each as
    /// ``hostAndPort(_:)`` takes it; nil when any is not (or none is given).
    public static func hostList(_ text: String) -> [String]? {
        let entries = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !entries.isEmpty, entries.count <= 16, entries.allSatisfy({ hostAndPort($0) != nil }) else { return nil }
        return entries
    }

    /// What ``hostAndPort(_:)`` takes, in words (for a refusal).
    public static let expected = "expected HOST:PORT (a host name, an IPv4 address or an IPv6 one in brackets as [::1]:41641, and a port)"

    /// From "HOST:PORT" with an address or a host name, looked up now (getaddrinfo:
    /// /etc/hosts, DNS): its first IPv4 address, else its first IPv6 one.
    public static func resolving(_ text: String) throws(ResolutionError) -> UDPAddress {
        try resolvingAll(text)[0]
    }

    /// Every address "HOST:PORT" has, looked up now: a literal address alone, or
    /// each of a host name's A and AAAA records once, the IPv4 ones first (in the
    /// order getaddrinfo gives them), 64 at most. Never empty.
    public static func resolvingAll(_ text: String) throws(ResolutionError) -> [UDPAddress] {
        if let literal = UDPAddress(text) { return [literal] }
        guard let (host, port) = hostAndPort(text) else { throw ResolutionError(text: text, reason: expected) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = datagramSocket
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        var v4: [UDPAddress] = [], v6: [UDPAddress] = []
        var next = status == 0 ? list : nil
        while let entry = next {
            if let sa = entry.pointee.ai_addr {
                if entry.pointee.ai_family == AF_INET {
                    let a = UDPAddress(host: UnsafeRawPointer(sa).assumingMemoryBound(to: sockaddr_in.self).pointee.sin_addr.s_addr, port: port)
                    if !v4.contains(a) { v4.append(a) }
                } else if entry.pointee.ai_family == AF_INET6 {
                    var raw = UnsafeRawPointer(sa).assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_addr
                    let a = UDPAddress(ipv6: withUnsafeBytes(of: &raw) { Array($0) }, port: port)
                    if !v6.contains(a) { v6.append(a) }
                }
            }
            next = entry.pointee.ai_next
        }
        guard !(v4.isEmpty && v6.isEmpty) else {
            let why = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw ResolutionError(text: text, reason: "cannot find \(host) (\(why)); check the name, or give the address")
        }
        return Array((v4 + v6).prefix(maxAddresses)) // a name's answer is the network's: bounded
    }

    /// The most addresses ``resolvingAll(_:)`` gives for one name.
    public static let maxAddresses = 64

    public var description: String {
        if var bytes = ipv6 {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = bytes.withUnsafeMutableBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(INET6_ADDRSTRLEN)) }
            return "[" + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "]:\(port)"
        }
        var address = in_addr(s_addr: host)
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &address, &buffer, socklen_t(INET_ADDRSTRLEN))
        let text = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: text, as: UTF8.self) + ":\(port)"
    }
}

/// A UDP socket bound to an IPv4 address, reading on a dispatch source.
/// One datagram carries exactly one frame.
public final class UDPSocket: @unchecked Sendable {
    public enum Error: Swift.Error, CustomStringConvertible {
        case system(String, Int32)
        public var description: String {
            switch self { case let .system(call, code): "\(call) failed: \(String(cString: strerror(code)))" }
        }
    }

    public static let maxDatagram = 65_507

    private let fd: Int32
    public let localPort: UInt16
    /// AF_INET, or AF_INET6 for a socket bound to an IPv6 address (dual stack: IPv4 peers as mapped addresses).
    private let family: Int32
    private let queue = DispatchQueue(label: "starling.udp")
    private var source: DispatchSourceRead?

    /// Binds to `address` (port 0: the system picks one). `reuseAddress` lets
    /// several processes bind one multicast port.
    public init(bindTo address: UDPAddress, reuseAddress: Bool = false) throws {
        let family = address.ipv6 == nil ? AF_INET : AF_INET6
        self.family = family
        let descriptor = socket(family, datagramSocket, 0)
        guard descriptor >= 0 else { throw Error.system("socket", errno) }
        if reuseAddress {
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        if family == AF_INET6 {
            var zero: Int32 = 0
            setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size))
        }
        var storage = Self.socketAddress(address, family: family)
        let bindLength = Self.length(family)
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, bindLength) }
        }
        guard bound == 0 else {
            let code = errno
            closeDescriptor(descriptor)
            throw Error.system("bind \(address)", code)
        }
        var actual = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        // Room for a burst of fragments (a 100 KiB file is ~220 datagrams); the
        // kernel caps this at net.core.rmem_max / wmem_max.
        var size: Int32 = 4 << 20
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        fd = descriptor
        localPort = Self.address(actual)?.port ?? address.port
    }

    private static func length(_ family: Int32) -> socklen_t {
        socklen_t(family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    }

    /// `address` as a socket address of `family` (an IPv4 one mapped into IPv6 for an IPv6 socket).
    private static func socketAddress(_ address: UDPAddress, family: Int32) -> sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            if family == AF_INET6 {
                var sa = sockaddr_in6()
                sa.sin6_family = sa_family_t(AF_INET6)
                sa.sin6_port = address.port.bigEndian
                let bytes = address.ipv6 ?? ([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + withUnsafeBytes(of: address.host) { Array($0) })
                withUnsafeMutableBytes(of: &sa.sin6_addr) { $0.copyBytes(from: bytes) }
                withUnsafeBytes(of: sa) { raw.copyMemory(from: $0) }
            } else {
                var sa = sockaddr_in()
                sa.sin_family = sa_family_t(AF_INET)
                sa.sin_port = address.port.bigEndian
                sa.sin_addr.s_addr = address.host
                withUnsafeBytes(of: sa) { raw.copyMemory(from: $0) }
            }
        }
        return storage
    }

    /// A socket address read from the kernel, as a ``UDPAddress`` (a mapped IPv4 one as IPv4).
    private static func address(_ storage: sockaddr_storage) -> UDPAddress? {
        withUnsafeBytes(of: storage) { raw in
            switch Int32(storage.ss_family) {
            case AF_INET:
                let sa = raw.load(as: sockaddr_in.self)
                return UDPAddress(host: sa.sin_addr.s_addr, port: UInt16(bigEndian: sa.sin_port))
            case AF_INET6:
                var sa = raw.load(as: sockaddr_in6.self)
                return UDPAddress(ipv6: withUnsafeBytes(of: &sa.sin6_addr) { Array($0) }, port: UInt16(bigEndian: sa.sin6_port))
            default:
                return nil
            }
        }
    }

    deinit { close() }

    /// Joins an IPv4 multicast group on every interface.
    public func joinMulticastGroup(_ group: UInt32) throws {
        var request = ip_mreq(imr_multiaddr: in_addr(s_addr: group), imr_interface: in_addr(s_addr: 0))
        guard setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size)) == 0 else {
            throw Error.system("IP_ADD_MEMBERSHIP", errno)
        }
    }

    /// Sends one datagram; errors (a peer gone, a full buffer) drop it, as radio loss would.
    @discardableResult
    public func send(_ bytes: [UInt8], to address: UDPAddress) -> Bool {
        guard family == AF_INET6 || address.ipv6 == nil else { return false } // an IPv6 peer needs an IPv6 socket
        var sa = Self.socketAddress(address, family: family)
        let length = Self.length(family)
        let sent = bytes.withUnsafeBytes { buf in
            withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buf.baseAddress, buf.count, 0, $0, length)
                }
            }
        }
        return sent == bytes.count
    }

    /// Datagrams as they arrive, until the socket is closed. Datagrams longer
    /// than `maxSize` are read and dropped at once, never copied or queued
    /// (``oversized`` counts them).
    public func datagrams(maxSize: Int = UDPSocket.maxDatagram) -> AsyncStream<(UDPAddress, [UInt8])> {
        reading(buffering: .bufferingNewest(4096), maxSize: maxSize) { next, yield in
            while let datagram = next() { yield(datagram) }
        }
    }

    /// Datagrams as they arrive, in batches: each wake-up of the reader reads
    /// what the kernel holds (at most `maxBatch`) and yields it as one array,
    /// so that a busy server pays one hand-over per batch, not per datagram.
    /// At most `backlog` datagrams wait for the consumer, however they are
    /// batched; past that new ones are dropped (``overflowed`` counts them), as
    /// a full socket buffer drops them. Oversized datagrams are dropped as
    /// ``datagrams(maxSize:)`` drops them.
    public func datagramBatches(maxSize: Int = UDPSocket.maxDatagram, maxBatch: Int = 256, backlog: Int = 4_096)
        -> DatagramBatches
    {
        let waiting = DatagramBatches.Backlog(limit: backlog)
        let stream: AsyncStream<DatagramBatches.Element> = reading(buffering: .unbounded, maxSize: maxSize) { [weak self] next, yield in
            var batch: [(UDPAddress, [UInt8])] = []
            while let datagram = next() {
                guard waiting.admit() else {
                    self?.noteOverflow()
                    continue
                }
                batch.append(datagram)
                if batch.count == maxBatch {
                    yield(batch)
                    batch = []
                }
            }
            if !batch.isEmpty { yield(batch) }
        }
        return DatagramBatches(stream: stream, backlog: waiting)
    }

    /// The reader both streams share: a dispatch source on the socket whose
    /// wake-ups `drain` with `next` (the next datagram no longer than
    /// `maxSize`, nil when none waits; longer ones are counted and dropped).
    private func reading<Element: Sendable>(buffering: AsyncStream<Element>.Continuation.BufferingPolicy, maxSize: Int,
                                  _ drain: @escaping @Sendable (_ next: () -> (UDPAddress, [UInt8])?, _ yield: (Element) -> Void) -> Void)
        -> AsyncStream<Element>
    {
        AsyncStream(bufferingPolicy: buffering) { continuation in
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            var buffer = [UInt8](repeating: 0, count: Self.maxDatagram)
            source.setEventHandler { [fd, weak self] in
                drain({
                    while let (from, n) = Self.receive(fd, into: &buffer) {
                        if n > maxSize {
                            self?.noteOversized()
                            continue
                        }
                        return (from, Array(buffer[0..<n]))
                    }
                    return nil
                }, { continuation.yield($0) })
            }
            source.setCancelHandler { continuation.finish() }
            continuation.onTermination = { [weak self] _ in self?.cancelReading() }
            lock.lock()
            self.source = source
            lock.unlock()
            source.resume()
        }
    }

    /// One datagram into `buffer`: its source and length (which may exceed
    /// the buffer's when the kernel had more); nil when none waits.
    private static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> (UDPAddress, Int)? {
        while true {
            var from = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = buffer.withUnsafeMutableBytes { buf in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, buf.baseAddress, buf.count, 0, $0, &length)
                    }
                }
            }
            guard n >= 0 else { return nil }
            if let address = address(from) { return (address, n) } // (another family's: skipped)
        }
    }

    private var closed = false
    private let lock = NSLock()
    private var oversizedCount = 0
    private var overflowCount = 0
    private func noteOversized() { lock.withLock { oversizedCount += 1 } }
    private func noteOverflow() { lock.withLock { overflowCount += 1 } }
    /// Datagrams dropped for being longer than the reader's `maxSize`.
    public var oversized: Int { lock.withLock { oversizedCount } }
    /// Datagrams dropped because a batched reader's backlog was full.
    public var overflowed: Int { lock.withLock { overflowCount } }

    /// Stops reading (once); the stream of datagrams then finishes.
    private func cancelReading() {
        lock.lock()
        let s = source
        source = nil
        lock.unlock()
        s?.cancel()
    }

    /// Stops reading and closes the socket (once). Safe from any thread,
    /// the socket's own queue included.
    public func close() {
        cancelReading()
        lock.lock()
        let wasOpen = !closed
        closed = true
        lock.unlock()
        if wasOpen { closeDescriptor(fd) }
    }
}

/// A socket's datagrams in batches (``UDPSocket/datagramBatches(maxSize:maxBatch:backlog:)``):
/// an asynchronous sequence that counts, as the consumer takes each batch,
/// the datagrams no longer waiting.
public struct DatagramBatches: AsyncSequence, Sendable {
    public typealias Element = [(UDPAddress, [UInt8])]

    /// Datagrams read and not yet taken by the consumer.
    final class Backlog: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        let limit: Int
        init(limit: Int) { self.limit = limit }
        /// One more waits, if there is room.
        func admit() -> Bool {
            lock.withLock {
                guard count < limit else { return false }
                count += 1
                return true
            }
        }
        func taken(_ n: Int) { lock.withLock { count -= n } }
    }

    let stream: AsyncStream<Element>
    let backlog: Backlog

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Element>.AsyncIterator
        let backlog: Backlog
        public mutating func next() async -> Element? {
            guard let batch = await base.next() else { return nil }
            backlog.taken(batch.count)
            return batch
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), backlog: backlog) }
}
