import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import StarlingYaOKServer
import StarlingWire
import StarlingYaOKServerCore

/// `yaok-server --metrics HOST:PORT`: GET /metrics in Prometheus's text
/// format (swift-prometheus), served with SwiftNIO's HTTP/1.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let users: Gauge
    private let queued: Gauge
    private let sessions: Gauge
    private let messagesIn: Counter
    private let dropsIn: Counter, dropsOut: Counter
    private let dropsHeld: Gauge
    private let messagesOut: Counter
    private let packetsIn: Counter
    private let packetsOut: Counter
    private let commits: Counter
    private let storeFailures: Counter
    private let checkpointFailures: Counter
    private let deadPushes: Counter
    private let rejections: [ServerRejection: Counter]
    private let dropped: [String: Counter]
    private let last = Last()

    final class Last: @unchecked Sendable {
        let lock = NSLock()
        var values: [String: Int] = [:]
        /// How much `name` grew since the last look.
        func delta(_ name: String, _ now: Int) -> Int64 {
            lock.withLock {
                defer { values[name] = now }
                return Int64(max(0, now - (values[name] ?? 0)))
            }
        }
    }

    init() {
        func d(_ name: String, _ unit: String = "", _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "starling", subsystem: "relay", metricName: name, unitName: unit, helpText: help)
        }
        users = registry.makeGauge(descriptor: d("registered_users", "", "Users with a pinned key"))
        queued = registry.makeGauge(descriptor: d("queue_depth", "", "Messages waiting for their recipients"))
        sessions = registry.makeGauge(descriptor: d("sessions", "", "Registered sessions on this server"))
        messagesIn = registry.makeCounter(descriptor: d("messages_in", "total", "MSGs received from senders"))
        dropsIn = registry.makeCounter(descriptor: d("drops_in", "total", "Courier drops the mailbox took (new ones)"))
        dropsOut = registry.makeCounter(descriptor: d("drops_out", "total", "Courier drops sent in answers to DROP_FETCH"))
        dropsHeld = registry.makeGauge(descriptor: d("drops_held", "", "Courier drops in the mailbox"))
        messagesOut = registry.makeCounter(descriptor: d("messages_out", "total", "MSGs sent to recipients"))
        packetsIn = registry.makeCounter(descriptor: d("packets_in", "total", "Datagrams received"))
        packetsOut = registry.makeCounter(descriptor: d("packets_out", "total", "Datagrams sent"))
        commits = registry.makeCounter(descriptor: d("commits", "total", "Group commits of queued messages"))
        storeFailures = registry.makeCounter(descriptor: d("store_failures", "total", "Store operations that failed (no answer, or REJECTED storage)"))
        checkpointFailures = registry.makeCounter(descriptor: d("checkpoint_failures", "total", "SQLite checkpoints that failed (tried again)"))
        deadPushes = registry.makeCounter(descriptor: d("dead_pushes", "total",
                                                        "Sessions ended because a MSG pushed to them had no packet after it for 75 s"))
        var r: [ServerRejection: Counter] = [:]
        for why in ServerRejection.allCases {
            r[why] = registry.makeCounter(descriptor: d("rejections", "total", "REJECTED answers, by reason"),
                                          labels: [("reason", why.identifier)])
        }
        rejections = r
        let registry = self.registry
        dropped = Dictionary(uniqueKeysWithValues: ["rate_limited", "undecodable"].map {
            ($0, registry.makeCounter(descriptor: d("dropped", "total", "Packets dropped without an answer, by reason"), labels: [("reason", $0)]))
        })
    }

    /// Reads the server's counters and the store's counts.
    func update(_ server: YaOKServer, _ store: any ServerStore) async {
        let c = await server.counters
        if let counts = try? await store.counts() {
            users.set(to: Double(counts.users))
            queued.set(to: Double(counts.queued))
        }
        sessions.set(to: Double(await server.sessionCount))
        messagesIn.increment(by: last.delta("in", c.messagesIn))
        dropsIn.increment(by: last.delta("din", c.dropsIn))
        dropsOut.increment(by: last.delta("dout", c.dropsOut))
        if let n = try? await store.dropCount() { dropsHeld.set(to: Double(n)) }
        messagesOut.increment(by: last.delta("out", c.messagesOut))
        packetsIn.increment(by: last.delta("pin", c.received))
        packetsOut.increment(by: last.delta("pout", c.sent))
        commits.increment(by: last.delta("commits", await server.commits))
        storeFailures.increment(by: last.delta("storeFailures", await server.storeFailures))
        if let sqlite = store as? SQLiteServerStore {
            checkpointFailures.increment(by: last.delta("checkpointFailures", sqlite.checkpointFailures))
        }
        for (why, counter) in rejections { counter.increment(by: last.delta("r\(why.rawValue)", c.rejections[why] ?? 0)) }
        deadPushes.increment(by: last.delta("deadPushes", c.deadPushes))
        dropped["rate_limited"]!.increment(by: last.delta("rate", c.rateLimited))
        dropped["undecodable"]!.increment(by: last.delta("undecodable", c.undecodable))
    }

    /// Serves GET /metrics on `host:port`; returns the bound port.
    func serve(host: String, port: Int) async throws -> (Channel, Int) {
        let registry = self.registry
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(MetricsHandler(registry: registry))
                }
            }
            .bind(host: host, port: port).get()
        return (channel, channel.localAddress?.port ?? port)
    }

    final class MetricsHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let registry: PrometheusCollectorRegistry
        var head: HTTPRequestHead?
        init(registry: PrometheusCollectorRegistry) { self.registry = registry }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case let .head(h): head = h
            case .body: break
            case .end:
                guard let head else { return }
                let ok = head.method == .GET && head.uri.split(separator: "?").first == "/metrics"
                let body = ok ? registry.emitToBuffer() : Array("not found: GET /metrics\n".utf8)
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: ok ? "text/plain; version=0.0.4" : "text/plain")
                headers.add(name: "Content-Length", value: String(body.count))
                headers.add(name: "Connection", value: "close")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: ok ? .ok : .notFound, headers: headers))),
                              promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
                let channel = context.channel // Sendable: the response written, the connection closes
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
                self.head = nil
            }
        }
    }
}
