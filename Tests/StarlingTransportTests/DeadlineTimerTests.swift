import Foundation
import StarlingTransport
import Testing

/// The one timer every runtime keeps for its core (``DeadlineTimer``).
@Suite struct DeadlineTimerTests {
    /// A runtime with a fake core whose deadline the test sets.
    actor Runtime {
        var timer = DeadlineTimer()
        var fires = 0
        var deadline: UInt64?
        /// Whether the core's deadline stays where it was after a tick (a stuck core).
        var sticky = true
        func unstick() { sticky = false }
        let start = ContinuousClock.now
        var now: UInt64 {
            let d = (ContinuousClock.now - start).components
            return UInt64(d.seconds) * 1_000 + UInt64(d.attoseconds / 1_000_000_000_000_000)
        }

        func set(_ d: UInt64?) { deadline = d; rearm() }
        func rearm() { timer.arm(at: deadline, now: now) { [weak self] in await self?.wake() } }
        func wake() {
            timer.fired()
            fires += 1
            if !sticky { deadline = nil }
            rearm()
        }
        func cancel() { timer.cancel() }
        var immediate: Int { timer.immediateFires }
    }

    static func waitUntil(_ seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return await condition()
    }

    @Test func firesOnceAtTheDeadlineAndNotWithout() async throws {
        let r = Runtime()
        await r.set(nil)
        try await Task.sleep(for: .milliseconds(50))
        #expect(await r.fires == 0, "nothing due: no fire")
        await r.set(await r.now + 20)
        #expect(await Self.waitUntil(120) { await r.fires >= 1 })
        // The deadline did not move: it is in the past now, so the core is ticked again at once...
        // ...and a core whose deadline never moves is held to 10 ms between fires after 64 in a row.
        #expect(await Self.waitUntil(120) { await r.immediate >= 64 }, "fires in a row at once, counted")
        let before = await r.fires
        try await Task.sleep(for: .milliseconds(500))
        let fires = await r.fires - before
        #expect(fires <= 55, "a stuck deadline fired \(fires) times in 0.5 s: at most one every 10 ms")
        // A deadline in the future ends the run of immediate fires (a fire already on its way lands first).
        await r.set(await r.now + 60_000)
        #expect(await Self.waitUntil(120) { await (r.timer.wakeAt ?? 0) > r.now + 50_000 }, "armed for the minute")
        let settled = await r.fires
        try await Task.sleep(for: .milliseconds(200))
        #expect(await r.fires == settled, "a deadline a minute away fired early")
        await r.cancel()
    }

    @Test func anEarlierDeadlineReplacesALaterOneAndCancelStops() async throws {
        let r = Runtime()
        await r.unstick()
        await r.set(await r.now + 60_000)
        await r.set(await r.now + 10)
        #expect(await Self.waitUntil(120) { await r.fires == 1 }, "the earlier deadline fired")
        await r.set(await r.now + 1_000)
        await r.cancel()
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(await r.fires == 1, "cancelled: no fire")
    }
}

/// "HOST:PORT" with a host name (issue 52: README's `--server relay.example.org:41641`
/// was refused as "expected an IPv4 host"). Only names this machine knows
/// without asking the network are looked up here (/etc/hosts).
@Suite struct HostNameTests {
    @Test func aHostNameIsLookedUpAndAnAddressStaysAnAddress() throws {
        // Upper case: not the "localhost" shortcut, so getaddrinfo answers (from /etc/hosts).
        let named = try UDPAddress.resolving("LOCALHOST:41641")
        #expect(named == UDPAddress.loopback(41641))
        #expect(try UDPAddress.resolving("192.168.1.20:7878").description == "192.168.1.20:7878")
        #expect(UDPAddress.hostAndPort("relay.example.org:41641")?.host == "relay.example.org")
        #expect(UDPAddress.hostAndPort("relay.example.org:41641")?.port == 41641)
        // Refused before any lookup: no port, port 0, a character no host name has, an empty label.
        for bad in ["relay.example.org", "relay.example.org:0", "bad_host:1", "a..b:1", ":1", "host:65536"] {
            #expect(UDPAddress.hostAndPort(bad) == nil, "\(bad)")
            #expect(throws: UDPAddress.ResolutionError.self, "\(bad)") { try UDPAddress.resolving(bad) }
        }
    }

    /// Issue 57: a server at several addresses, as a list or as a name's records.
    @Test func aServerListAndEveryAddressOfAName() throws {
        #expect(UDPAddress.hostList("a.example:41641, b.example:41641,[::1]:9") == ["a.example:41641", "b.example:41641", "[::1]:9"])
        #expect(UDPAddress.hostList("127.0.0.1:7") == ["127.0.0.1:7"], "one is a list of one (the control)")
        for bad in ["", ",", "a.example:41641,", "a.example:41641,b.example", "a.example:41641;b.example:41641",
                    Array(repeating: "a.example:1", count: 17).joined(separator: ",")] {
            #expect(UDPAddress.hostList(bad) == nil, "\(bad)")
        }
        // Every address of a name, IPv4 first; a literal alone.
        let all = try UDPAddress.resolvingAll("localhost:41641")
        #expect(all.first == UDPAddress.loopback(41641) && Set(all).count == all.count, "\(all)")
        #expect(try UDPAddress.resolvingAll("192.168.1.20:7878").map(\.description) == ["192.168.1.20:7878"])
        #expect(throws: UDPAddress.ResolutionError.self) { try UDPAddress.resolvingAll("nowhere.invalid:1") }
    }
}

/// IPv6 for the servers a node talks to (issue 52 item 8: `[::1]:41641` was
/// refused): literals in brackets, a dual-stack socket that hears IPv4 peers as
/// IPv4, and the mesh's IPv4 sockets refusing to send to an IPv6 address.
@Suite struct IPv6AddressTests {
    @Test func literalsInBracketsParseAndPrintBack() throws {
        let one = try #require(UDPAddress("[::1]:41641"))
        #expect(one.ipv6 == [UInt8](repeating: 0, count: 15) + [1] && one.port == 41641)
        #expect(one.description == "[::1]:41641")
        #expect(UDPAddress("[2001:db8::7]:9")?.description == "[2001:db8::7]:9")
        #expect(UDPAddress("[::ffff:127.0.0.1]:5") == UDPAddress.loopback(5), "a mapped IPv4 address is IPv4")
        #expect(UDPAddress.hostAndPort("[::1]:41641")?.host == "::1")
        #expect(try UDPAddress.resolving("[::1]:41641") == one)
        for bad in ["::1:41641", "[::1]", "[::1]:", "[::g]:1", "[::1]:0", "[::1]x:1"] {
            #expect(UDPAddress.hostAndPort(bad) == nil, "\(bad)")
        }
        // The control: IPv4 as before.
        #expect(UDPAddress("127.0.0.1:7")?.ipv6 == nil && UDPAddress("127.0.0.1:7")?.description == "127.0.0.1:7")
    }

    @Test func aDualStackSocketHearsAndAnswersIPv4AndIPv6() async throws {
        let server = try UDPSocket(bindTo: .anyIPv6(0))
        defer { server.close() }
        let v4 = try UDPSocket(bindTo: .loopback(0)), v6 = try UDPSocket(bindTo: try #require(UDPAddress("[::1]:0")))
        defer { v4.close(); v6.close() }
        let heard = server.datagrams()
        #expect(v4.send([1], to: .loopback(server.localPort)))
        #expect(v6.send([2], to: try #require(UDPAddress("[::1]:\(server.localPort)"))))
        var from: [UInt8: UDPAddress] = [:]
        for await (address, bytes) in heard {
            from[bytes[0]] = address
            if from.count == 2 { break }
        }
        #expect(from[1] == .loopback(v4.localPort), "an IPv4 peer is heard as IPv4: \(String(describing: from[1]))")
        #expect(from[2]?.description == "[::1]:\(v6.localPort)", "\(String(describing: from[2]))")
        // Answered both ways; the IPv4 socket cannot send to an IPv6 address (the mesh's links stay IPv4).
        let answers = v4.datagrams()
        #expect(server.send([3], to: try #require(from[1])))
        for await (_, bytes) in answers { #expect(bytes == [3]); break }
        #expect(!v4.send([4], to: try #require(from[2])))
    }

    /// With a spacing, a deadline that comes right after a fire waits until
    /// `spacing` after it (a flood's relays share a wake); the control: without
    /// one, the same deadline is armed where it is.
    @Test func aSpacingHoldsTheNextWakeBackAndNoneDoesNot() {
        for spacing: UInt64 in [0, 10] {
            var timer = DeadlineTimer()
            timer.spacing = spacing
            timer.arm(at: 100, now: 100) {}
            #expect(timer.wakeAt == 100)
            timer.fired() // it fired at 100
            timer.arm(at: 103, now: 102) {}
            #expect(timer.wakeAt == (spacing == 0 ? 103 : 110), "spacing \(spacing): \(String(describing: timer.wakeAt))")
            timer.cancel()
            // Long after the last fire, a deadline is not moved at all.
            timer.arm(at: 500, now: 400) {}
            #expect(timer.wakeAt == 500)
            timer.cancel()
        }
    }
}
