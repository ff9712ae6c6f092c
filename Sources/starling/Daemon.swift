import ArgumentParser
import Foundation
import StarlingAPIContract
import Logging
import ServiceLifecycle
import StarlingMessenger
import StarlingMessengerAPI
import StarlingNode
import StarlingTransport
import StarlingWebClient

/// `starling daemon`: one node and its messenger for a data directory, until
/// SIGTERM, with the local API every face can use (docs/API.md).
struct Daemon: AsyncParsableCommand, ServerAlias {
    static let configuration = CommandConfiguration(
        abstract: "Run the node and its messenger for a data directory, with a local API for every face (chat, send, listen, scripts).",
        discussion: """
        The API listens on 127.0.0.1 (a free port, or --api-port) and on api.sock in the data \
        directory; api.json there (readable by this user only) names the address and the token \
        each request must carry. `starling send`, `listen` and `chat` given the same --data-dir \
        use it while it runs. SIGTERM or SIGINT ends it within 5 s. docs/API.md lists the calls.
        """
    )
    @OptionGroup var node: NodeOptions
    @Option(name: .customLong("server"), help: "A Ya OK server (HOST:PORT, or several separated by commas, tried in turn; `starling yaok-server`): contacts who are not on the mesh are reached through it.")
    var server: String?
    /// The old name of --server, kept for scripts: it works, and says the new one.
    @Option(name: .customLong("relay"), help: .private) var relayAlias: String?
    @Flag(help: "Poll the Ya OK server every 5 minutes instead of every 30 s.") var background = false
    @Option(help: "The API's TCP port on 127.0.0.1 (default: a free one, written to api.json).") var apiPort: Int = 0
    @Flag(help: "Print the API's description (OpenAPI 3.1, as GET /v1/openapi.json serves it; docs/openapi.json) and exit.")
    var openapi = false
    @Option(help: "Lock the encrypted store after this many seconds with no one using a face (the page, a chat), when it has a PIN or passphrase (0: never).")
    var lockAfter: Double = 300

    mutating func validate() throws {
        takeRelayAlias()
        if let server, UDPAddress.hostList(server) == nil { throw ValidationError("--server \(server): \(UDPAddress.expected), or several separated by commas") }
        guard (0...65_535).contains(apiPort) else { throw ValidationError("--api-port \(apiPort): a port is 0 to 65,535") }
        guard lockAfter >= 0 else { throw ValidationError("--lock-after \(lockAfter): seconds, 0 or more") }
    }

    func run() async throws {
        if openapi {
            do { StandardOutput.write(try APIDocument.json()) } catch { throw RuntimeFailure("the API's description could not be written: \(error)") }
            return
        }
        try await Self.serve(node, server: server, background: background, apiPort: apiPort, lockAfter: lockAfter) { _, _ in }
    }

    /// Runs the daemon until SIGTERM or SIGINT; `ready` hears the API's URL and token once it listens.
    static func serve(_ node: NodeOptions, server: String?, background: Bool, apiPort: Int, lockAfter: Double = 300,
                      ready: @escaping @Sendable (_ url: String, _ token: String) -> Void) async throws {
        let session = try await NodeSession.start(node, server: server, background: background, asks: true, storeMayWait: true)
        // The messenger's auto-lock, for every face (while the store has a PIN or passphrase: the key file would open it at once).
        await session.messenger.setAutoLock(after: lockAfter)
        var c = APIServer.Configuration(directory: session.directory)
        // The port of the last run when none is given and it is free: with the kept
        // token, the page's link stays good across a restart (seen in a person's pass:
        // the open page went dead when `web` came back on another port).
        c.port = apiPort != 0 ? apiPort : APIServer.keptPort(in: session.directory)
        c.settings = session.settings
        c.setOnCommandLine = session.setOnCommandLine
        c.keptOffers = await session.node.options.bulk?.keptOffers
        // The same token across restarts: the link a page or a script was given stays good.
        do { c.token = try APIServer.keptToken(in: session.directory) } catch {
            throw RuntimeFailure("the API's token could not be kept in \(session.directory.path)/api-token (\(error)): check the data directory's permissions")
        }
        do {
            c.files = try WebClient.files().map { APIServer.StaticFile(path: $0.path, contentType: $0.contentType, bytes: $0.bytes) }
            c.policy = WebClient.contentSecurityPolicy
        } catch {
            say("daemon: \(error) (the API runs without the page)")
        }
        let api = APIServer(client: session.client, configuration: c)
        let logger = Logger(label: "starling.api")
        let servers = try api.applications(logger: logger)
        let n = session.node, messenger = session.messenger
        let mesh = MeshService(node: n, messenger: messenger, api: api)
        // Shut down in reverse order: the node first (its LEAVE, its state saved), which
        // ends the event streams the API's clients follow; then the API servers.
        var configuration = ServiceGroupConfiguration(services: servers.map { .init(service: $0) } + [
            .init(service: mesh, successTerminationBehavior: .gracefullyShutdownGroup),
        ], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(3) // then cancelled: ended within 5 s, whatever a client does
        configuration.maximumCancellationDuration = .seconds(1)
        let group = ServiceGroup(configuration: configuration)
        // Said once the API is up: where it is.
        let token = c.token
        Task {
            let port = await api.port
            Self.say("daemon: \(await n.currentNickname) (\(n.identity.peerID)) — API on http://127.0.0.1:\(port) and \(api.socketPath); token in \(api.infoPath)")
            ready("http://127.0.0.1:\(port)", token)
        }
        do {
            try await group.run()
        } catch {
            api.removeFiles()
            throw RuntimeFailure("the daemon stopped: \(error)")
        }
        api.removeFiles()
        // Changes made while the store stayed locked could not be stored: said, never lost in silence.
        let held = await messenger.heldWriteCount
        if held > 0, await !messenger.isStoreOpen {
            Self.say("daemon: stopped with the store locked: \(held) change\(held == 1 ? "" : "s") made meanwhile (messages, trust decisions, read marks) could not be stored and \(held == 1 ? "is" : "are") lost; open the store (the page, /unlock) before stopping the daemon next time")
        }
        Self.say("daemon: stopped")
    }

    /// A line on standard output, unbuffered (a service manager's log reads it as it comes).
    static func say(_ line: String) { StandardOutput.write(Data((line + "\n").utf8)) }
}

/// `starling web`: the messenger in a browser, served by the daemon of the
/// data directory (started here when none runs).
struct Web: AsyncParsableCommand, ServerAlias {
    static let configuration = CommandConfiguration(
        abstract: "The messenger in your browser: the daemon of the data directory serves the page (one is started when none runs); open the link it prints.",
        discussion: """
        The link carries the API's token in its fragment (after #), which the browser never \
        sends in a request: keep it to yourself, as you would the data directory. The page \
        listens on 127.0.0.1 only and loads nothing from any other host.
        """
    )
    @OptionGroup var node: NodeOptions
    @Option(name: .customLong("server"), help: "A Ya OK server (HOST:PORT, or several separated by commas, tried in turn; `starling yaok-server`), when a daemon is started here.")
    var server: String?
    /// The old name of --server, kept for scripts: it works, and says the new one.
    @Option(name: .customLong("relay"), help: .private) var relayAlias: String?
    @Flag(help: "Poll the Ya OK server every 5 minutes instead of every 30 s.") var background = false
    @Option(help: "The API's TCP port on 127.0.0.1 when a daemon is started here (default: a free one).") var apiPort: Int = 0
    @Flag(help: "Open the link in the desktop's browser (xdg-open).") var open = false

    mutating func validate() throws {
        takeRelayAlias()
        if let server, UDPAddress.hostList(server) == nil { throw ValidationError("--server \(server): \(UDPAddress.expected), or several separated by commas") }
        guard (0...65_535).contains(apiPort) else { throw ValidationError("--api-port \(apiPort): a port is 0 to 65,535") }
    }

    func run() async throws {
        let open = self.open
        if let api = await APIClient.find(directory: DataDirectory(explicit: node.dataDir).url) {
            Self.announce("http://\(api.host):\(api.port)", api.token, open: open)
            return
        }
        try await Daemon.serve(node, server: server, background: background, apiPort: apiPort) { url, token in
            Self.announce(url, token, open: open)
        }
    }

    static func announce(_ url: String, _ token: String, open: Bool) {
        let link = "\(url)/#token=\(token)"
        Daemon.say("web: open \(link)")
        Daemon.say("web: (the link is the key to your messages: keep it to yourself)")
        guard open else { return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["xdg-open", link]
        do { try p.run() } catch { Daemon.say("web: xdg-open did not start (\(error)): open the link by hand") }
    }
}

/// The node, its messenger and the API's event log as one service: it runs
/// until a shutdown signal, then stops the node (state saved) within 5 s.
struct MeshService: Service {
    let node: MeshNode
    let messenger: Messenger
    let api: APIServer

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await messenger.run() }
            group.addTask { await api.record() }
            group.addTask {
                await withGracefulShutdownHandler {
                    await node.run()
                } onGracefulShutdown: {
                    Task { await node.leave() } // a signed LEAVE, then the node stops
                }
            }
            await group.waitForAll()
        }
    }
}
