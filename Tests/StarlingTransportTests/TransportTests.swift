import Foundation
import Testing
import StarlingWire
@testable import StarlingTransport

@Suite struct DiscoveryTests {
    @Test func helloMatchesTheDocumentAndNeverDecodesAsAPacket() throws {
        let peer = PeerID(hex: "a1b2c3d4e5f60718")!
        let hello = Discovery.hello(from: peer)
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")
        let doc = try String(contentsOf: url, encoding: .utf8)
        let marker = try #require(doc.range(of: "<!-- example: hello -->"))
        let open = try #require(doc[marker.upperBound...].range(of: "```hex\n"))
        let close = try #require(doc[open.upperBound...].range(of: "```"))
        #expect(hello == (try [UInt8](hex: doc[open.upperBound..<close.lowerBound])))
        #expect(Discovery.parseHello(hello) == peer)
        #expect(throws: WireError.self) { try Packet(decoding: hello) }
        #expect(Discovery.parseHello(Array(hello.dropLast())) == nil)
        var wrongVersion = hello
        wrongVersion[4] = 2
        #expect(Discovery.parseHello(wrongVersion) == nil)
    }

    @Test func addresses() {
        #expect(UDPAddress("127.0.0.1:47370")?.description == "127.0.0.1:47370")
        #expect(UDPAddress("localhost:9") == .loopback(9))
        #expect(UDPAddress("example.org:1") == nil)
        #expect(UDPAddress("127.0.0.1") == nil)
        #expect(UDPAddress("127.0.0.1:70000") == nil)
    }
}

@Suite struct UDPSocketTests {
    @Test func datagramsGoBothWaysOnLoopback() async throws {
        let a = try UDPSocket(bindTo: .loopback(0))
        let b = try UDPSocket(bindTo: .loopback(0))
        defer { a.close(); b.close() }
        #expect(a.localPort != 0 && a.localPort != b.localPort)
        let stream = b.datagrams()
        // Bounded: closing b ends the stream after 5 s whatever happens.
        let watchdog = Task { try await Task.sleep(for: .seconds(5)); b.close() }
        defer { watchdog.cancel() }
        for i in 0..<5 { #expect(a.send([UInt8(i), 1, 2, 3], to: .loopback(b.localPort))) }
        var got: [[UInt8]] = []
        for await (from, bytes) in stream {
            #expect(from == .loopback(a.localPort))
            got.append(bytes)
            if got.count == 5 { break }
        }
        #expect(got.map { $0[0] } == [0, 1, 2, 3, 4])
    }

    /// The batched reader's backlog counts datagrams, however they were
    /// batched: with room for 50, 50 wait (the first ones) and the rest are
    /// counted as dropped; once taken, there is room again.
    @Test func batchesWaitUpToTheirBacklogInDatagrams() async throws {
        let a = try UDPSocket(bindTo: .loopback(0))
        let b = try UDPSocket(bindTo: .loopback(0))
        defer { a.close(); b.close() }
        let batches = b.datagramBatches(maxBatch: 8, backlog: 50)
        let watchdog = Task { try await Task.sleep(for: .seconds(20)); b.close() }
        defer { watchdog.cancel() }
        for i in 0..<300 { #expect(a.send([UInt8(i / 256), UInt8(i % 256)], to: .loopback(b.localPort))) }
        let deadline = Date().addingTimeInterval(10)
        while b.overflowed < 250, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(b.overflowed == 250)
        var got: [Int] = [], sizes: [Int] = []
        var iterator = batches.makeAsyncIterator()
        while got.count < 50, let batch = await iterator.next() {
            sizes.append(batch.count)
            got += batch.map { Int($0.1[0]) * 256 + Int($0.1[1]) }
        }
        #expect(got == Array(0..<50), "the first 50, in order")
        #expect(sizes.allSatisfy { $0 <= 8 })
        for i in 300..<310 { #expect(a.send([UInt8(i / 256), UInt8(i % 256)], to: .loopback(b.localPort))) }
        var more: [Int] = []
        while more.count < 10, let batch = await iterator.next() { more += batch.map { Int($0.1[0]) * 256 + Int($0.1[1]) } }
        #expect(more == Array(300..<310))
        #expect(b.overflowed == 250)
    }

    @Test func bindingAPortInUseFailsWithAClearError() throws {
        let a = try UDPSocket(bindTo: .loopback(0))
        defer { a.close() }
        let e = #expect(throws: UDPSocket.Error.self) { try UDPSocket(bindTo: .loopback(a.localPort)) }
        #expect(e?.description.contains("bind") == true)
    }
}

@Suite struct InMemoryHubTests {
    /// An embedder that keeps only the endpoints (the nodes hold them) still
    /// has working links: each endpoint keeps its hub.
    @Test(.timeLimit(.minutes(1))) func linksOutliveTheHubsOwnerAndReleasedEndpointsLeaveIt() async throws {
        weak var released: InMemoryTransport?
        let (a, b): (InMemoryTransport, InMemoryTransport) = {
            let hub = InMemoryHub()
            let a = hub.endpoint("a"), b = hub.endpoint("b")
            hub.connect(a, b)
            do {
                let gone = hub.endpoint("c")
                hub.connect(a, gone)
                released = gone
            }
            return (a, b)
        }()
        #expect(released == nil, "the hub holds no endpoint alive")
        a.send([1, 2, 3], on: .mesh, to: ["b", "c"])
        var got: [UInt8]?
        for await e in b.events {
            if case let .frame(from, bytes, _) = e { #expect(from == "a"); got = bytes; break }
        }
        #expect(got == [1, 2, 3])
        // The control: a link ended is ended (nothing is delivered).
        await a.close("b")
        a.send([4], on: .mesh, to: ["b"])
        await b.stop()
        var after: [[UInt8]] = []
        for await e in b.events { if case let .frame(_, bytes, _) = e { after.append(bytes) } }
        #expect(after.isEmpty)
    }
}
