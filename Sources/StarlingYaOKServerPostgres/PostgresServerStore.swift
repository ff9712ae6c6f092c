import Foundation
import Logging
import PostgresNIO
import StarlingWire
import StarlingYaOKServerCore

/// The relay's queues and pinned keys in PostgreSQL (postgres-nio), so that
/// several Ya OK servers behind one address serve one population: a message
/// queued through one is fetched through another. Each batch is one
/// transaction; the per-user and total caps are checked inside it. The
/// queue's length is kept in a row of its own (`relay_queue_count`), locked
/// first by every write, and each recipient's in `relay_queue_lengths`, kept by
/// the same statements: the caps are exact across servers and cost no count of
/// a queue.
public final class PostgresServerStore: ServerStore, Sendable {
    private let connection: ClientHolder
    /// The commits' own connection (``beginCommit(_:)``).
    private let line: CommitLine
    private let logger: Logger
    public let maxUsers: Int
    public let commitsUnderWay: Int
    /// How long one operation may take before it fails and the client (its
    /// pool of connections) is made anew: a restart of the database can leave
    /// an operation waiting for ever on a connection it cut.
    public let timeout: Duration

    /// Connects (the client runs until ``close()``) and creates the tables if
    /// they are not there. `url`: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE.
    ///
    /// `commitsUnderWay`: commits a server may have begun at once, written in
    /// order to one connection of their own (2: PostgreSQL runs the next as
    /// soon as the last is done, without waiting for the server between them).
    public init(url: String, maxUsers: Int = 1_000_000, timeout: Duration = .seconds(10), commitsUnderWay: Int = 2) async throws {
        guard let parsed = URLComponents(string: url), parsed.scheme == "postgres" || parsed.scheme == "postgresql",
              let host = parsed.host, let user = parsed.user else {
            throw ConfigurationError(description: "expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE, got \(url)")
        }
        let database = parsed.path.hasPrefix("/") ? String(parsed.path.dropFirst()) : parsed.path
        var config = PostgresClient.Configuration(host: host, port: parsed.port ?? 5432, username: user, password: parsed.password,
                                                  database: database.isEmpty ? user : database, tls: .disable)
        config.options.maximumConnections = 8
        connection = ClientHolder(config)
        logger = Logger(label: "starling.relay.postgres")
        var lineConfiguration = PostgresConnection.Configuration(host: host, port: parsed.port ?? 5432, username: user, password: parsed.password,
                                                                 database: database.isEmpty ? user : database, tls: .disable)
        lineConfiguration.options.connectTimeout = .seconds(Int64(timeout.components.seconds))
        line = CommitLine(lineConfiguration, logger: logger)
        self.commitsUnderWay = max(1, commitsUnderWay)
        self.maxUsers = maxUsers
        self.timeout = timeout
        try await migrate()
    }

    public struct ConfigurationError: Error, CustomStringConvertible { public var description: String }

    /// An operation that did not finish in time (the database restarted, or is unreachable).
    public struct TimedOut: Error, CustomStringConvertible {
        public var description: String
    }

    public func close() {
        connection.close()
        line.close()
    }

    /// The client now, with its runner; made anew when an operation times out.
    private final class ClientHolder: @unchecked Sendable {
        private let lock = NSLock()
        private let configuration: PostgresClient.Configuration
        private var client: PostgresClient
        private var runner: Task<Void, Never>

        init(_ configuration: PostgresClient.Configuration) {
            self.configuration = configuration
            let c = PostgresClient(configuration: configuration)
            client = c
            runner = Task { await c.run() }
        }

        var current: PostgresClient { lock.withLock { client } }

        /// A fresh client in place of `stale` (once, however many operations timed out on it).
        func replace(_ stale: PostgresClient) {
            lock.withLock {
                guard client === stale else { return }
                runner.cancel()
                let c = PostgresClient(configuration: configuration)
                client = c
                runner = Task { await c.run() }
            }
        }

        func close() { lock.withLock { runner.cancel() } }
    }

    /// Resumes its waiter once: with the operation's result, or with ``TimedOut``.
    private final class Race<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, any Error>?
        private var timer: Task<Void, Never>?
        init(_ c: CheckedContinuation<T, any Error>) { continuation = c }

        /// The timer, cancelled at once if the race is already over.
        func setTimer(_ t: Task<Void, Never>) {
            let over = lock.withLock { () -> Bool in
                if continuation == nil { return true }
                timer = t
                return false
            }
            if over { t.cancel() }
        }

        /// `body` under the race's lock if it is not over (nil if it is): what the
        /// work does there (a write) cannot happen after a timeout has been claimed.
        func unlessOver<R>(_ body: () throws -> R) rethrows -> R? {
            try lock.withLock { continuation == nil ? nil : try body() }
        }

        /// Ends the race with `result` if it is not over: `first` runs before the
        /// waiter is resumed (a timeout's clean-up, done before anyone goes on).
        @discardableResult
        func finish(_ result: Result<T, any Error>, first: () -> Void = {}) -> Bool {
            guard let (c, t) = lock.withLock({ () -> (CheckedContinuation<T, any Error>, Task<Void, Never>?)? in
                guard let c = continuation else { return nil }
                continuation = nil
                return (c, timer)
            }) else { return false }
            t?.cancel()
            first()
            c.resume(with: result)
            return true
        }
    }

    /// One operation on the current client, bounded by ``timeout``: past it the
    /// operation fails (the server answers REJECTED; the sender retries) and the
    /// client is made anew, so that the next one gets fresh connections.
    private func bounded<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let client = connection.current, holder = connection
        return try await bounded(what, timedOut: { holder.replace(client) }) { _ in try await body(client) }
    }

    /// `body` bounded by ``timeout``: past it, it fails with ``TimedOut`` (once
    /// `timedOut` has run) and is cancelled. `body` is handed the race, to write
    /// only while it is not over (``Race/unlessOver(_:)``).
    private func bounded<T: Sendable>(_ what: String, timedOut: @escaping @Sendable () -> Void,
                                      _ body: @escaping @Sendable (Race<T>) async throws -> T) async throws -> T {
        let timeout = self.timeout, logger = self.logger
        return try await withCheckedThrowingContinuation { continuation in
            let race = Race(continuation)
            let work = Task {
                do { race.finish(.success(try await body(race))) } catch { race.finish(.failure(error)) }
            }
            race.setTimer(Task {
                do { try await Task.sleep(for: timeout) } catch { return }
                race.finish(.failure(TimedOut(description: "PostgreSQL did not answer \(what) within \(timeout)"))) {
                    logger.warning("PostgreSQL did not answer in time: connecting anew", metadata: ["operation": "\(what)"])
                    work.cancel()
                    timedOut()
                }
            })
        }
    }

    /// The commits' connection: each commit's statements are written to it in
    /// the order the commits were begun (a turn each), so that PostgreSQL runs
    /// one right after the other and a commit begun later sees what the one
    /// before wrote. Opened at the first commit, and again after it closed.
    private final class CommitLine: @unchecked Sendable {
        private let lock = NSLock()
        private let configuration: PostgresConnection.Configuration
        private let logger: Logger
        private var last: Turn?
        private var connection: PostgresConnection?
        private var opened = 0
        private var closed = false

        init(_ configuration: PostgresConnection.Configuration, logger: Logger) {
            self.configuration = configuration
            self.logger = logger
        }

        /// A commit's turn: over once its statements are written (or it gave up).
        final class Turn: @unchecked Sendable {
            private let lock = NSLock()
            private var over = false
            private var waiters: [CheckedContinuation<Void, Never>] = []

            func end() {
                let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                    over = true
                    defer { waiters = [] }
                    return waiters
                }
                for w in waiting { w.resume() }
            }

            func wait() async {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let now = lock.withLock { () -> Bool in
                        if over { return true }
                        waiters.append(c)
                        return false
                    }
                    if now { c.resume() }
                }
            }
        }

        /// The turn before (nil: none) and a new one after it.
        func take() -> (before: Turn?, mine: Turn) {
            lock.withLock {
                let mine = Turn(), before = last
                last = mine
                return (before, mine)
            }
        }

        /// The connection, opened if it is not (in turn, one at a time). A commit
        /// that timed out while connecting installs nothing (`isOver`, asked under
        /// its race's lock), and a connection is never made once the line is
        /// closed; whichever connection is replaced is closed, never dropped open.
        func open<T>(unlessOver race: Race<T>) async throws -> PostgresConnection {
            if let c = lock.withLock({ connection }), !c.isClosed { return c }
            guard !lock.withLock({ closed }) else { throw LineClosed() }
            let id = lock.withLock { () -> Int in opened += 1; return opened }
            let fresh = try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
            let outcome = race.unlessOver { () -> Installing in
                lock.withLock {
                    if closed { return .refused }
                    if let c = connection, !c.isClosed { return .useInstead(c) }
                    defer { connection = fresh }
                    return .installed(replaced: connection)
                }
            } ?? .refused
            switch outcome {
            case let .installed(replaced):
                if let replaced { Self.close(replaced) }
                return fresh
            case let .useInstead(c):
                Self.close(fresh)
                return c
            case .refused:
                Self.close(fresh)
                throw LineClosed()
            }
        }

        struct LineClosed: Error {}
        enum Installing { case installed(replaced: PostgresConnection?), useInstead(PostgresConnection), refused }

        /// Closes `stale`: what waits on it fails, and the next commit connects anew.
        func reset(_ stale: PostgresConnection) {
            let closing = lock.withLock { () -> PostgresConnection? in
                guard let c = connection, c === stale else { return nil }
                connection = nil
                return c
            }
            if let closing { Self.close(closing) }
        }

        /// Closed for good (the store's ``PostgresServerStore/close()``): no connection is made after.
        func close() {
            let closing = lock.withLock { () -> PostgresConnection? in
                closed = true
                defer { connection = nil }
                return connection
            }
            if let closing { Self.close(closing) }
        }

        deinit { if let connection { Self.close(connection) } }

        /// Closed, and kept until it is (a connection must not go before its channel has).
        private static func close(_ c: PostgresConnection) {
            c.close().whenComplete { _ in withExtendedLifetime(c) {} }
        }

    }

    private func migrate() async throws {
        // Two servers starting at once: the DDL is idempotent, and serialised by an advisory lock.
        try await bounded("the schema") { client in try await client.withTransaction(logger: self.logger) { c in
            try await c.query("SELECT pg_advisory_xact_lock(41641)", logger: self.logger)
            try await c.query("""
                CREATE TABLE IF NOT EXISTS relay_users (user_id BYTEA PRIMARY KEY, key BYTEA NOT NULL, last_register BIGINT NOT NULL)
                """, logger: self.logger)
            try await c.query("""
                CREATE TABLE IF NOT EXISTS relay_queue (seq BIGSERIAL, recipient BYTEA NOT NULL, message_id BYTEA NOT NULL,
                    sender BYTEA NOT NULL, payload BYTEA NOT NULL, received_at BIGINT NOT NULL,
                    PRIMARY KEY (recipient, seq), UNIQUE (recipient, message_id))
                """, logger: self.logger)
            // Three B-trees a message: (recipient, seq), the order a POLL reads; (recipient,
            // message ID), a retry's and an ACK's; the arrival time, expiry's (appended at its
            // right edge). A BRIN index instead was 15% cheaper to insert into but scanned the
            // whole table until summarised (148 ms at 1,000,000 queued, every 30 s), and a queue's
            // churn spreads each page's times. Until 2026-11 the key was seq alone, beside a
            // fourth B-tree on (recipient, seq): a database from then is moved over.
            try await c.query("""
                DO $$ BEGIN
                    IF EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = 'relay_queue'::regclass AND i.indisprimary AND i.indnatts = 1) THEN
                        ALTER TABLE relay_queue DROP CONSTRAINT relay_queue_pkey, ADD PRIMARY KEY (recipient, seq);
                    END IF;
                END $$
                """, logger: self.logger)
            try await c.query("DROP INDEX IF EXISTS relay_queue_by_recipient", logger: self.logger)
            try await c.query("CREATE INDEX IF NOT EXISTS relay_queue_by_age ON relay_queue (received_at)", logger: self.logger)
            try await c.query("CREATE INDEX IF NOT EXISTS relay_users_by_age ON relay_users (last_register)", logger: self.logger)
            try await c.query("""
                CREATE TABLE IF NOT EXISTS relay_queue_count (id INT PRIMARY KEY CHECK (id = 1), total BIGINT NOT NULL)
                """, logger: self.logger)
            try await c.query("""
                INSERT INTO relay_queue_count (id, total) SELECT 1, count(*) FROM relay_queue ON CONFLICT (id) DO NOTHING
                """, logger: self.logger)
            try await c.query("""
                CREATE TABLE IF NOT EXISTS relay_queue_lengths (recipient BYTEA PRIMARY KEY, n BIGINT NOT NULL)
                """, logger: self.logger)
            // The users, counted as they come (a first registration checks the cap against it,
            // not a count of 100,000 rows); counted again at each start, as the queue is.
            try await c.query("""
                CREATE TABLE IF NOT EXISTS relay_user_count (id INT PRIMARY KEY CHECK (id = 1), total BIGINT NOT NULL)
                """, logger: self.logger)
            try await c.query("""
                INSERT INTO relay_user_count (id, total) SELECT 1, count(*) FROM relay_users ON CONFLICT (id) DO NOTHING
                """, logger: self.logger)
            try await c.query("""
                CREATE TABLE IF NOT EXISTS relay_drops (seq BIGSERIAL PRIMARY KEY, drop_id BYTEA NOT NULL UNIQUE, tag BYTEA NOT NULL,
                    envelope BYTEA NOT NULL, expires_at BIGINT NOT NULL, received_at BIGINT NOT NULL)
                """, logger: self.logger)
            try await c.query("CREATE INDEX IF NOT EXISTS relay_drops_by_tag ON relay_drops (tag, seq)", logger: self.logger)
            try await c.query("CREATE INDEX IF NOT EXISTS relay_drops_by_expiry ON relay_drops (expires_at)", logger: self.logger)
            try await c.query("""
                CREATE TABLE IF NOT EXISTS relay_drop_count (id INT PRIMARY KEY CHECK (id = 1), total BIGINT NOT NULL)
                """, logger: self.logger)
            try await c.query("""
                INSERT INTO relay_drop_count (id, total) SELECT 1, count(*) FROM relay_drops ON CONFLICT (id) DO NOTHING
                """, logger: self.logger)
            try await c.query(PostgresQuery(unsafeSQL: Self.commitFunction), logger: self.logger)
        } }
        // Counted again at each start, so that a length that ever drifted is
        // right again: in a transaction of its own that takes the length's lock
        // first, as every write does. (In the one above, the index DDL holds a
        // lock on the queue, and a writer holding the length's lock waits for
        // the queue: a deadlock, measured against a live server.)
        try await bounded("the recount") { client in try await client.withTransaction(logger: self.logger) { c in
            try await Self.lockTheLength(c, self.logger)
            try await c.query("UPDATE relay_queue_count SET total = (SELECT count(*) FROM relay_queue) WHERE id = 1", logger: self.logger)
            try await c.query("SELECT total FROM relay_user_count WHERE id = 1 FOR UPDATE", logger: self.logger)
            try await c.query("UPDATE relay_user_count SET total = (SELECT count(*) FROM relay_users) WHERE id = 1", logger: self.logger)
            try await c.query("SELECT pg_advisory_xact_lock(41642)", logger: self.logger)
            try await c.query("UPDATE relay_drop_count SET total = (SELECT count(*) FROM relay_drops) WHERE id = 1", logger: self.logger)
            try await c.query("DELETE FROM relay_queue_lengths", logger: self.logger)
            try await c.query("""
                INSERT INTO relay_queue_lengths (recipient, n) SELECT recipient, count(*) FROM relay_queue GROUP BY recipient
                """, logger: self.logger)
        } }
    }

    private static func buffer(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }
    private static func bytes(_ buffer: ByteBuffer) -> [UInt8] { Array(buffer.readableBytesView) }

    public func pinned(_ user: UserID) async throws -> (key: [UInt8], lastTimestamp: UInt64)? {
        struct Pin: Sendable { var key: [UInt8]; var last: UInt64 }
        let found: Pin? = try await bounded("a pinned key") { client in
            let rows = try await client.query("SELECT key, last_register FROM relay_users WHERE user_id = \(Self.buffer(user.bytes))",
                                              logger: self.logger)
            for try await (key, last) in rows.decode((ByteBuffer, Int64).self) { return Pin(key: Self.bytes(key), last: UInt64(last)) }
            return nil
        }
        return found.map { ($0.key, $0.last) }
    }

    public func register(_ user: UserID, key: [UInt8], timestamp: UInt64) async throws -> RegisterOutcome {
        let maxUsers = self.maxUsers
        return try await bounded("a registration") { client in try await client.withTransaction(logger: self.logger) { c in
            let id = Self.buffer(user.bytes)
            // Renewal, atomic with its conditions: the same key, a newer time.
            var renewed = false, pinned = false
            for try await _ in try await c.query("""
                UPDATE relay_users SET last_register = \(Int64(timestamp))
                WHERE user_id = \(id) AND key = \(Self.buffer(key)) AND last_register < \(Int64(timestamp)) RETURNING 1
                """, logger: self.logger).decode(Int32.self) { renewed = true }
            if renewed { return .registered }
            for try await _ in try await c.query("SELECT 1 FROM relay_users WHERE user_id = \(id)", logger: self.logger)
                .decode(Int32.self) { pinned = true }
            if pinned { return .conflict }
            // The count's row locked: first registrations on every server go one at a time.
            var count = 0
            for try await n in try await c.query("SELECT total FROM relay_user_count WHERE id = 1 FOR UPDATE", logger: self.logger)
                .decode(Int64.self) { count = Int(n) }
            guard count < maxUsers else { return .full }
            // A first registration; another server's at the same instant wins, and this one conflicts.
            var inserted = false
            for try await _ in try await c.query("""
                WITH inserted AS (INSERT INTO relay_users (user_id, key, last_register) VALUES (\(id), \(Self.buffer(key)), \(Int64(timestamp)))
                                  ON CONFLICT (user_id) DO NOTHING RETURNING 1),
                counted AS (UPDATE relay_user_count SET total = total + (SELECT count(*) FROM inserted) WHERE id = 1)
                SELECT 1 FROM inserted
                """, logger: self.logger).decode(Int32.self) { inserted = true }
            return inserted ? .registered : .conflict
        } }
    }

    /// MSGs, ACKs and drops that arrived together, in one transaction: one
    /// statement (`relay_commit`, a function kept in the database) and so one
    /// round trip when there are no drops, the transaction implicit in it.
    /// Drops, rare and capped, add the advisory lock and their own statements
    /// in an explicit transaction.
    public func commit(_ writes: StoreWrites) async throws -> StoreWritten { try await beginCommit(writes).value }

    /// The statement is made now (while earlier commits run) and written to
    /// the commits' connection as soon as the commit begun before has written
    /// its own: PostgreSQL runs it as soon as that one is done. A commit with
    /// drops (several statements, each waiting for the last's answer) holds its
    /// turn until it is over.
    public func beginCommit(_ writes: StoreWrites) -> CommitUnderWay {
        let acks = writes.acks, drops = writes.drops, dropLimits = writes.dropLimits
        let (before, mine) = line.take()
        let line = self.line, logger = self.logger
        let opened = Opened()
        return CommitUnderWay(Task { () async throws -> StoreWritten in
            // Made here, off the caller (the server's actor), while the commits before it run.
            let call = Self.commitCall(writes)
            do {
                let written: StoreWritten = try await self.bounded("a commit", timedOut: {
                    // The connection it wrote to, if any, closed before the turn ends (below).
                    if let c = opened.connection { line.reset(c) }
                }) { (race: Race<StoreWritten>) async throws -> StoreWritten in
                    await before?.wait()
                    let c = try await line.open(unlessOver: race)
                    opened.connection = c
                    guard !drops.isEmpty else {
                        // Written now, in turn, unless the commit has timed out meanwhile.
                        let write = { () -> EventLoopFuture<PostgresQueryResult> in c.query(call, logger: logger) }
                        guard let answer = race.unlessOver(write) else {
                            throw CancellationError()
                        }
                        mine.end()
                        let rows = try await answer.get().rows.map { try $0.decode(Self.CommitRow.self) }
                        let (stored, removed) = try Self.decodeCommit(rows, acks: acks)
                        return StoreWritten(stored: stored, removed: removed, dropped: [])
                    }
                    guard race.unlessOver({ true }) == true else { throw CancellationError() }
                    return try await c.withTransaction(logger: logger) { c in
                        var rows: [CommitRow] = []
                        for try await row in try await c.query(call, logger: logger).decode(Self.CommitRow.self) { rows.append(row) }
                        let (stored, removed) = try Self.decodeCommit(rows, acks: acks)
                        // Drop writers of every server one at a time (an advisory lock, taken before the
                        // sequence moves: sequence numbers follow the commits), so that the tag's share
                        // and the total hold across servers.
                        try await c.query("SELECT pg_advisory_xact_lock(41642)", logger: logger)
                        let dropped = try await self.keep(drops, limits: dropLimits, on: c)
                        return StoreWritten(stored: stored, removed: removed, dropped: dropped)
                    }
                }
                mine.end()
                return written
            } catch {
                // A commit that failed or timed out ends its turn only once the one before it
                // has (a timeout while waiting must not let the next commit write into the
                // transaction of the one it waited for), and after its connection was closed.
                await before?.wait()
                mine.end()
                throw error
            }
        })
    }

    /// The connection a commit wrote to (closed if the commit times out).
    private final class Opened: @unchecked Sendable {
        private let lock = NSLock()
        private var c: PostgresConnection?
        var connection: PostgresConnection? {
            get { lock.withLock { c } }
            set { lock.withLock { c = newValue } }
        }
    }

    /// The outcomes' codes in `relay_commit`, in `EnqueueOutcome`'s terms.
    private static let outcomes: [Int32: EnqueueOutcome] = [
        0: .stored, 1: .unknownRecipient, 2: .recipientQueueFull, 3: .serverFull, 4: .messageIDTaken, 5: .messageIDReused,
    ]

    private static func commitCall(_ writes: StoreWrites) -> PostgresQuery {
        let m = writes.messages
        return """
            SELECT outcomes, removed_recipients, removed_ids, removed_senders, removed_payloads, removed_times FROM relay_commit(
                \(ByteaArray(ids: m.map(\.recipient))), \(ByteaArray(ids: m.map(\.messageID))), \(ByteaArray(ids: m.map(\.sender))),
                \(ByteaArray(bytes: m.map(\.payload))), \(m.map { Int64(clamping: $0.receivedAt) }),
                \(Int64(writes.limits.perUser)), \(Int64(writes.limits.total)),
                \(ByteaArray(ids: writes.acks.map(\.user))), \(ByteaArray(ids: writes.acks.map(\.messageID))))
            """
    }

    /// A `BYTEA[]` in PostgreSQL's binary array format, each element written
    /// straight into the bind. `[ByteBuffer]` made a buffer (and each ID a
    /// `[UInt8]`) a field a message: ~6% of the server's CPU flat out (`perf`).
    struct ByteaArray: PostgresNonThrowingEncodable {
        static var psqlType: PostgresDataType { .byteaArray }
        static var psqlFormat: PostgresFormat { .binary }
        private enum Elements { case ids([UserID]), bytes([[UInt8]]) }
        private let elements: Elements

        init(ids: [UserID]) { elements = .ids(ids) }
        init(bytes: [[UInt8]]) { elements = .bytes(bytes) }

        var count: Int {
            switch elements {
            case let .ids(ids): ids.count
            case let .bytes(bytes): bytes.count
            }
        }

        /// As postgres-nio writes an `Array`: dimensions (0 when empty), no
        /// NULLs, the element type, then the length and lower bound, each
        /// element its byte count and bytes.
        func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
            buffer.writeInteger(count == 0 ? 0 : 1, as: UInt32.self)
            buffer.writeInteger(0, as: Int32.self)
            buffer.writeInteger(PostgresDataType.bytea.rawValue)
            guard count > 0 else { return }
            buffer.writeInteger(Int32(count))
            buffer.writeInteger(1, as: Int32.self)
            switch elements {
            case let .ids(ids):
                for id in ids {
                    buffer.writeInteger(16, as: Int32.self)
                    buffer.writeInteger(id.value.high) // big-endian: bytes 0–7
                    buffer.writeInteger(id.value.low)
                }
            case let .bytes(all):
                for bytes in all {
                    buffer.writeInteger(Int32(bytes.count))
                    buffer.writeBytes(bytes)
                }
            }
        }
    }

    /// `relay_commit`'s one row.
    typealias CommitRow = ([Int32]?, [ByteBuffer]?, [ByteBuffer]?, [ByteBuffer]?, [ByteBuffer]?, [Int64]?)

    /// Each message's outcome, in order, and what each ACK found (an ACK
    /// repeated in the batch finds nothing the second time).
    private static func decodeCommit(_ rows: [CommitRow], acks: [(user: UserID, messageID: UserID)]) throws -> ([EnqueueOutcome], [QueuedMessage?]) {
        struct Key: Hashable { let recipient: UserID, messageID: UserID }
        var stored: [EnqueueOutcome] = [], found: [Key: QueuedMessage] = [:]
        for (codes, r, m, s, p, t) in rows {
            for code in codes ?? [] {
                guard let outcome = outcomes[code] else { throw UnexpectedAnswer(description: "relay_commit answered outcome \(code)") }
                stored.append(outcome)
            }
            let (r, m, s, p, t) = (r ?? [], m ?? [], s ?? [], p ?? [], t ?? [])
            guard [m.count, s.count, p.count, t.count].allSatisfy({ $0 == r.count }) else {
                throw UnexpectedAnswer(description: "relay_commit answered removed rows of unequal lengths")
            }
            for i in r.indices {
                guard let recipient = UserID(bytes: bytes(r[i])), let id = UserID(bytes: bytes(m[i])),
                      let sender = UserID(bytes: bytes(s[i])) else { continue }
                found[Key(recipient: recipient, messageID: id)] = QueuedMessage(messageID: id, sender: sender, recipient: recipient,
                                                                                payload: bytes(p[i]), receivedAt: UInt64(t[i]))
            }
        }
        return (stored, acks.map { found.removeValue(forKey: Key(recipient: $0.user, messageID: $0.messageID)) })
    }

    /// The database answered what this version of the store never asks for (another version's schema?).
    public struct UnexpectedAnswer: Error, CustomStringConvertible { public var description: String }

    /// `relay_commit`: a batch of MSGs and ACKs in one statement. The queue's
    /// length row is locked first (writers on every server go one at a time,
    /// and each statement after the lock sees every other server's committed
    /// batch). A batch that fits whole under both caps is inserted at once: by a
    /// plain INSERT when it holds nothing held already (the unique index finds
    /// one; the INSERT is then undone to its savepoint and made again with ON
    /// CONFLICT, and what that leaves is judged against the row there); one
    /// near a cap is decided message by message. Either way, in the batch's
    /// order, as the reference store decides:
    /// unknown recipient (1); held already, in the table or earlier in the
    /// batch: the same sender and bytes are stored again (0), another sender's
    /// (4), other bytes (5); the recipient's queue full (2); the server full
    /// (3); else stored (0). What went in is inserted in arrival order (seq),
    /// the lengths grow by it; then the ACKs' rows are deleted (only the
    /// recipient's own) and the lengths lowered, and the removed rows answered.
    static let commitFunction = """
        CREATE OR REPLACE FUNCTION relay_commit(
            in_r BYTEA[], in_m BYTEA[], in_s BYTEA[], in_p BYTEA[], in_t BIGINT[], per_user BIGINT, cap BIGINT,
            ack_r BYTEA[], ack_m BYTEA[],
            OUT outcomes INT[], OUT removed_recipients BYTEA[], OUT removed_ids BYTEA[], OUT removed_senders BYTEA[],
            OUT removed_payloads BYTEA[], OUT removed_times BIGINT[])
        LANGUAGE plpgsql AS $$
        DECLARE
            v_total BIGINT;
            v_count INT := coalesce(array_length(in_r, 1), 0);
            v_known BOOLEAN[]; v_lengths BIGINT[]; v_held_s BYTEA[]; v_held_p BYTEA[]; v_first INT[]; v_k INT[];
            v_added BIGINT[]; v_ok BOOLEAN[];
            v_i INT; v_f INT;
            v_users BYTEA[]; v_fits BOOLEAN; v_for_users BIGINT; v_inserted BIGINT; v_all_users BOOLEAN;
        BEGIN
            SELECT c.total INTO v_total FROM relay_queue_count c WHERE c.id = 1 FOR UPDATE;
            outcomes := '{}';
            IF v_count > 0 THEN
                -- The recipients that are users, and whether the batch fits whole
                -- (each one's queue and the total, as if none were held already).
                SELECT array_agg(b.r), coalesce(bool_and(coalesce(l.n, 0) + b.c <= per_user), true), coalesce(sum(b.c), 0)
                  INTO v_users, v_fits, v_for_users
                  FROM (SELECT x.r, count(*) AS c FROM unnest(in_r) AS x(r) GROUP BY x.r) b
                  JOIN relay_users u ON u.user_id = b.r
                  LEFT JOIN relay_queue_lengths l ON l.recipient = b.r;
                v_fits := v_fits AND v_total + v_for_users <= cap;
                -- Every message to a user (the common case): no message is looked for in
                -- v_users (x.r = ANY(v_users) scans it: 500 messages to 500 people made
                -- 250,000 comparisons, three times a batch).
                v_all_users := v_for_users = v_count;
            END IF;
            IF v_count > 0 AND v_fits THEN
                -- It fits (the common case): every message to a user goes in, in
                -- arrival order.
                IF v_for_users > 0 THEN
                    BEGIN
                        -- Nothing held already (the common case): a plain INSERT, one descent of
                        -- each index a message (ON CONFLICT looks each one up first: ~15% of
                        -- PostgreSQL's time a message). Each recipient's length grows by its count.
                        INSERT INTO relay_queue (recipient, message_id, sender, payload, received_at)
                        SELECT x.r, x.m, x.s, x.p, x.t FROM unnest(in_r, in_m, in_s, in_p, in_t) WITH ORDINALITY AS x(r, m, s, p, t, i)
                        WHERE v_all_users OR x.r = ANY(v_users) ORDER BY x.i;
                        GET DIAGNOSTICS v_inserted = ROW_COUNT;
                        INSERT INTO relay_queue_lengths (recipient, n)
                        SELECT x.r, count(*) FROM unnest(in_r) AS x(r) WHERE v_all_users OR x.r = ANY(v_users) GROUP BY x.r
                        ON CONFLICT (recipient) DO UPDATE SET n = relay_queue_lengths.n + EXCLUDED.n;
                        UPDATE relay_queue_count SET total = total + v_inserted WHERE id = 1;
                    EXCEPTION WHEN unique_violation THEN
                        -- One held already (a retry, or twice in the batch): all of it undone, and
                        -- inserted again leaving what is held, to be judged against the row there.
                        WITH inserted AS (
                            INSERT INTO relay_queue (recipient, message_id, sender, payload, received_at)
                            SELECT x.r, x.m, x.s, x.p, x.t FROM unnest(in_r, in_m, in_s, in_p, in_t) WITH ORDINALITY AS x(r, m, s, p, t, i)
                            WHERE v_all_users OR x.r = ANY(v_users) ORDER BY x.i
                            ON CONFLICT (recipient, message_id) DO NOTHING RETURNING recipient),
                        lengths AS (
                            INSERT INTO relay_queue_lengths (recipient, n) SELECT recipient, count(*) FROM inserted GROUP BY recipient
                            ON CONFLICT (recipient) DO UPDATE SET n = relay_queue_lengths.n + EXCLUDED.n)
                        UPDATE relay_queue_count SET total = total + (SELECT count(*) FROM inserted) WHERE id = 1
                        RETURNING (SELECT count(*) FROM inserted) INTO v_inserted;
                    END;
                ELSE
                    v_inserted := 0;
                END IF;
                IF v_inserted = v_for_users AND v_all_users THEN
                    outcomes := array_fill(0, ARRAY[v_count]);
                ELSIF v_inserted = v_for_users THEN
                    SELECT array_agg(CASE WHEN x.r = ANY(v_users) THEN 0 ELSE 1 END ORDER BY x.i) INTO outcomes
                      FROM unnest(in_r) WITH ORDINALITY AS x(r, i);
                ELSE
                    SELECT array_agg(CASE WHEN q.sender IS NULL THEN 1 WHEN q.sender <> x.s THEN 4 WHEN q.payload = x.p THEN 0 ELSE 5 END
                                     ORDER BY x.i) INTO outcomes
                      FROM unnest(in_r, in_m, in_s, in_p) WITH ORDINALITY AS x(r, m, s, p, i)
                      LEFT JOIN relay_queue q ON q.recipient = x.r AND q.message_id = x.m;
                END IF;
            ELSIF v_count > 0 THEN
                -- Near a cap: message by message, exactly as one by one.
                SELECT array_agg(u.user_id IS NOT NULL ORDER BY b.i), array_agg(coalesce(l.n, 0) ORDER BY b.i),
                       array_agg(q.sender ORDER BY b.i), array_agg(q.payload ORDER BY b.i),
                       array_agg(b.f ORDER BY b.i), array_agg(b.k ORDER BY b.i)
                  INTO v_known, v_lengths, v_held_s, v_held_p, v_first, v_k
                  FROM (SELECT x.r, x.m, x.i::INT AS i, min(x.i::INT) OVER (PARTITION BY x.r, x.m) AS f,
                               dense_rank() OVER (ORDER BY x.r)::INT AS k
                          FROM unnest(in_r, in_m) WITH ORDINALITY AS x(r, m, i)) b
                  LEFT JOIN relay_users u ON u.user_id = b.r
                  LEFT JOIN relay_queue_lengths l ON l.recipient = b.r
                  LEFT JOIN relay_queue q ON q.recipient = b.r AND q.message_id = b.m;
                v_added := array_fill(0::BIGINT, ARRAY[v_count]);
                v_ok := array_fill(false, ARRAY[v_count]);
                FOR v_i IN 1..v_count LOOP
                    v_f := v_first[v_i];
                    IF NOT v_known[v_i] THEN
                        outcomes := outcomes || 1;
                    ELSIF v_held_s[v_i] IS NOT NULL THEN
                        outcomes := outcomes || CASE WHEN v_held_s[v_i] <> in_s[v_i] THEN 4 WHEN v_held_p[v_i] = in_p[v_i] THEN 0 ELSE 5 END;
                    ELSIF v_f < v_i AND v_ok[v_f] THEN
                        outcomes := outcomes || CASE WHEN in_s[v_f] <> in_s[v_i] THEN 4 WHEN in_p[v_f] = in_p[v_i] THEN 0 ELSE 5 END;
                    ELSIF v_lengths[v_i] + v_added[v_k[v_i]] >= per_user THEN
                        outcomes := outcomes || 2;
                    ELSIF v_total >= cap THEN
                        outcomes := outcomes || 3;
                    ELSE
                        v_ok[v_i] := true;
                        v_added[v_k[v_i]] := v_added[v_k[v_i]] + 1;
                        v_total := v_total + 1;
                        outcomes := outcomes || 0;
                    END IF;
                END LOOP;
                WITH inserted AS (
                    INSERT INTO relay_queue (recipient, message_id, sender, payload, received_at)
                    SELECT x.r, x.m, x.s, x.p, x.t FROM unnest(in_r, in_m, in_s, in_p, in_t) WITH ORDINALITY AS x(r, m, s, p, t, i)
                    WHERE v_ok[x.i::INT] ORDER BY x.i
                    ON CONFLICT (recipient, message_id) DO NOTHING RETURNING recipient),
                lengths AS (
                    INSERT INTO relay_queue_lengths (recipient, n) SELECT recipient, count(*) FROM inserted GROUP BY recipient
                    ON CONFLICT (recipient) DO UPDATE SET n = relay_queue_lengths.n + EXCLUDED.n)
                UPDATE relay_queue_count SET total = total + (SELECT count(*) FROM inserted) WHERE id = 1;
            END IF;
            IF coalesce(array_length(ack_r, 1), 0) > 0 THEN
                WITH removed AS (
                    DELETE FROM relay_queue q USING unnest(ack_r, ack_m) AS x(r, m)
                    WHERE q.recipient = x.r AND q.message_id = x.m
                    RETURNING q.recipient, q.message_id, q.sender, q.payload, q.received_at),
                counted AS (UPDATE relay_queue_count SET total = total - (SELECT count(*) FROM removed) WHERE id = 1),
                lengths AS (UPDATE relay_queue_lengths l SET n = l.n - r.c
                            FROM (SELECT recipient, count(*) AS c FROM removed GROUP BY recipient) r WHERE l.recipient = r.recipient)
                SELECT array_agg(recipient), array_agg(message_id), array_agg(sender), array_agg(payload), array_agg(received_at)
                  INTO removed_recipients, removed_ids, removed_senders, removed_payloads, removed_times FROM removed;
            END IF;
        END
        $$
        """

    public func fetch(_ user: UserID, limit: Int) async throws -> [QueuedMessage] {
        try await bounded("a fetch") { client in
            let rows = try await client.query("""
                SELECT message_id, sender, payload, received_at FROM relay_queue WHERE recipient = \(Self.buffer(user.bytes))
                ORDER BY seq LIMIT \(Int64(limit))
                """, logger: self.logger)
            var out: [QueuedMessage] = []
            for try await (id, sender, payload, at) in rows.decode((ByteBuffer, ByteBuffer, ByteBuffer, Int64).self) {
                guard let id = UserID(bytes: Self.bytes(id)), let sender = UserID(bytes: Self.bytes(sender)) else { continue }
                out.append(QueuedMessage(messageID: id, sender: sender, recipient: user, payload: Self.bytes(payload), receivedAt: UInt64(at)))
            }
            return out
        }
    }

    public func expire(before cutoff: UInt64) async throws -> Int {
        try await bounded("an expiry") { client in try await client.withTransaction(logger: self.logger) { c in
            try await Self.lockTheLength(c, self.logger)
            var n = 0
            for try await removed in try await c.query("""
                WITH removed AS (DELETE FROM relay_queue WHERE received_at < \(Int64(cutoff)) RETURNING recipient),
                \(unescaped: Self.lowerTheLengths)
                SELECT count(*) FROM removed
                """, logger: self.logger).decode(Int64.self) { n = Int(removed) }
            return n
        } }
    }

    /// Every write takes the queue length's row lock first (and reads the
    /// length): writers on several servers go one at a time, and none locks a
    /// recipient's length before the queue's (no two writers wait on each other).
    @discardableResult
    private static func lockTheLength(_ c: PostgresConnection, _ logger: Logger) async throws -> Int {
        var total = 0
        for try await n in try await c.query("SELECT total FROM relay_queue_count WHERE id = 1 FOR UPDATE", logger: logger)
            .decode(Int64.self) { total = Int(n) }
        return total
    }

    /// CTEs that lower the queue's length and each recipient's by what a
    /// `removed` CTE (with a `recipient` column) took.
    private static let lowerTheLengths = """
        counted AS (UPDATE relay_queue_count SET total = total - (SELECT count(*) FROM removed) WHERE id = 1),
        lengths AS (UPDATE relay_queue_lengths l SET n = l.n - r.c
                    FROM (SELECT recipient, count(*) AS c FROM removed GROUP BY recipient) r WHERE l.recipient = r.recipient)
        """

    public func counts() async throws -> (users: Int, queued: Int) {
        struct Counts: Sendable { var users = 0, queued = 0 }
        let c: Counts = try await bounded("the counts") { client in
            var c = Counts()
            // The kept counts (the metrics ask every second: a count of a million rows each time was ~50 ms of the database's).
            for try await (u, q) in try await client.query("""
                SELECT (SELECT total FROM relay_user_count WHERE id = 1), (SELECT total FROM relay_queue_count WHERE id = 1)
                """,
                                                           logger: self.logger).decode((Int64, Int64).self) {
                c.users = Int(u)
                c.queued = Int(q)
            }
            return c
        }
        return (c.users, c.queued)
    }

    // MARK: The courier mailbox

    /// Inside a commit holding the drops' lock, the batch in a fixed number of
    /// round trips, as if kept one by one: one held already (or earlier in the
    /// batch) is answered as held (with the later expiry); past the tag's share
    /// its oldest go; past the total, the expired, then the oldest of all.
    private func keep(_ drops: [StoredDrop], limits: DropLimits, on c: PostgresConnection) async throws -> [DropOutcome] {
        // A drop twice in the batch, or one held already beside new ones: one by one (a batch of
        // one is exactly that), so that what the shares push out is what they would one by one.
        if drops.count > 1, Set(drops.map(\.dropID)).count < drops.count {
            var outcomes: [DropOutcome] = []
            for d in drops { outcomes += try await keep([d], limits: limits, on: c) }
            return outcomes
        }
        // What is held already, and until when.
        var held: [Bytes16: Int64] = [:]
        let ids = drops.map { Self.buffer($0.dropID.bytes) }
        for try await (id, e) in try await c.query("SELECT drop_id, expires_at FROM relay_drops WHERE drop_id = ANY(\(ids))",
                                                   logger: self.logger).decode((ByteBuffer, Int64).self) {
            if let d = Bytes16(Self.bytes(id)) { held[d] = e }
        }
        if drops.count > 1, !held.isEmpty {
            var outcomes: [DropOutcome] = []
            for d in drops { outcomes += try await keep([d], limits: limits, on: c) }
            return outcomes
        }
        var outcomes: [DropOutcome] = []
        var inserts: [StoredDrop] = [], insertAt: [Bytes16: Int] = [:], updates: [Bytes16: StoredDrop] = [:]
        for drop in drops {
            if let i = insertAt[drop.dropID] {
                // Earlier in this batch: the later expiry wins, as with one held.
                if drop.expiresAt > inserts[i].expiresAt { (inserts[i].envelope, inserts[i].expiresAt) = (drop.envelope, drop.expiresAt) }
                outcomes.append(.stored(new: false))
            } else if let e = held[drop.dropID] {
                if Int64(clamping: drop.expiresAt) > max(e, Int64(clamping: updates[drop.dropID]?.expiresAt ?? 0)) { updates[drop.dropID] = drop }
                outcomes.append(.stored(new: false))
            } else {
                insertAt[drop.dropID] = inserts.count
                inserts.append(drop)
                outcomes.append(.stored(new: true))
            }
        }
        if !updates.isEmpty {
            let u = Array(updates.values)
            try await c.query("""
                UPDATE relay_drops AS d SET envelope = u.e, expires_at = u.x
                FROM unnest(\(u.map { Self.buffer($0.dropID.bytes) })::bytea[], \(u.map { Self.buffer($0.envelope) })::bytea[],
                            \(u.map { Int64(clamping: $0.expiresAt) })::bigint[]) AS u(i, e, x) WHERE d.drop_id = u.i
                """, logger: self.logger)
        }
        guard !inserts.isEmpty else { return outcomes }
        // The tag's share: of each tag's new drops the newest `perTag` go in, and of its
        // rows the newest that leave room for them stay (what one-by-one would leave).
        var newPerTag: [Bytes16: Int] = [:]
        for d in inserts { newPerTag[d.tag, default: 0] += 1 }
        var seenPerTag: [Bytes16: Int] = [:]
        inserts = inserts.filter { d in
            seenPerTag[d.tag, default: 0] += 1
            return newPerTag[d.tag]! - seenPerTag[d.tag]! < max(1, limits.perTag) // one by one, the newest always goes in
        }
        let tags = Array(newPerTag.keys)
        // The total is the kept count (`relay_drop_count`, under the drops' advisory lock like
        // every drop write): a count(*) of 10,000 churned rows was ~9 ms a commit.
        var total = try await Self.dropTotal(c, self.logger)
        total -= try await Self.counting(c, self.logger, """
            DELETE FROM relay_drops d USING (
                SELECT r.seq FROM (SELECT seq, tag, row_number() OVER (PARTITION BY tag ORDER BY seq DESC) AS n FROM relay_drops
                                   WHERE tag = ANY(\(tags.map { Self.buffer($0.bytes) })::bytea[])) r
                JOIN unnest(\(tags.map { Self.buffer($0.bytes) })::bytea[], \(tags.map { Int64(max(0, limits.perTag - newPerTag[$0]!)) })::bigint[])
                    AS k(tag, keep) ON r.tag = k.tag
                WHERE r.n > k.keep) gone
            WHERE d.seq = gone.seq RETURNING 1
            """)
        // The total: the expired go first, then the oldest, to leave room for the new.
        if total + inserts.count > limits.total {
            let now = Int64(clamping: inserts.map(\.receivedAt).max() ?? 0)
            total -= try await Self.counting(c, self.logger, "DELETE FROM relay_drops WHERE expires_at <= \(now) RETURNING 1")
            if inserts.count > limits.total { inserts.removeFirst(inserts.count - limits.total) }
            if total + inserts.count > limits.total {
                total -= try await Self.counting(c, self.logger, """
                    DELETE FROM relay_drops WHERE seq IN (SELECT seq FROM relay_drops ORDER BY seq LIMIT \(Int64(total + inserts.count - limits.total)))
                    RETURNING 1
                    """)
            }
        }
        // In the batch's order (WITH ORDINALITY): sequence numbers follow arrival. None is held (under the lock).
        let added = try await Self.counting(c, self.logger, """
            INSERT INTO relay_drops (drop_id, tag, envelope, expires_at, received_at)
            SELECT i, t, e, x, r FROM unnest(\(inserts.map { Self.buffer($0.dropID.bytes) })::bytea[], \(inserts.map { Self.buffer($0.tag.bytes) })::bytea[],
                                            \(inserts.map { Self.buffer($0.envelope) })::bytea[], \(inserts.map { Int64(clamping: $0.expiresAt) })::bigint[],
                                            \(inserts.map { Int64(clamping: $0.receivedAt) })::bigint[]) WITH ORDINALITY AS u(i, t, e, x, r, o)
            ORDER BY o RETURNING 1
            """)
        try await c.query("UPDATE relay_drop_count SET total = \(Int64(total + added)) WHERE id = 1", logger: self.logger)
        return outcomes
    }

    /// The drops held, as kept (the caller holds the drops' advisory lock).
    private static func dropTotal(_ c: PostgresConnection, _ logger: Logger) async throws -> Int {
        var total = 0
        for try await n in try await c.query("SELECT total FROM relay_drop_count WHERE id = 1", logger: logger).decode(Int64.self) { total = Int(n) }
        return total
    }

    /// Rows a `… RETURNING 1` statement wrote.
    private static func counting(_ c: PostgresConnection, _ logger: Logger, _ statement: PostgresQuery) async throws -> Int {
        var n = 0
        for try await _ in try await c.query(statement, logger: logger) { n += 1 }
        return n
    }

    public func drops(for tags: [Bytes16], after: UInt64, notExpiredAt now: UInt64, limit: Int) async throws -> [StoredDrop] {
        guard !tags.isEmpty else { return [] }
        // Each tag once (a tag twice would pick its drops twice below).
        let buffers = Set(tags).map { Self.buffer($0.bytes) }
        let after = Int64(clamping: after), now = Int64(clamping: now), limit = Int64(limit)
        return try await bounded("a drop fetch") { client in
            var out: [StoredDrop] = []
            // Each tag's first drops after the cursor through the (tag, seq) index, at most
            // `limit` a tag, then the first `limit` of them whole. Asked as one ORDER BY seq,
            // PostgreSQL walked the whole table in seq order looking for the tags: a fetch
            // whose tags hold nothing read every drop held (10,000: 7.9 ms against 0.8).
            for try await (seq, id, tag, envelope, expires, received) in try await client.query("""
                WITH picked AS (
                    SELECT d.seq FROM unnest(\(buffers)::BYTEA[]) AS t(tag) CROSS JOIN LATERAL (
                        SELECT seq FROM relay_drops WHERE tag = t.tag AND seq > \(after) AND expires_at > \(now) ORDER BY seq LIMIT \(limit)) d
                    ORDER BY d.seq LIMIT \(limit))
                SELECT r.seq, r.drop_id, r.tag, r.envelope, r.expires_at, r.received_at FROM relay_drops r JOIN picked p ON r.seq = p.seq
                ORDER BY r.seq
                """, logger: self.logger).decode((Int64, ByteBuffer, ByteBuffer, ByteBuffer, Int64, Int64).self) {
                guard let id = Bytes16(Self.bytes(id)), let tag = Bytes16(Self.bytes(tag)) else { continue }
                out.append(StoredDrop(sequence: UInt64(seq), dropID: id, tag: tag, envelope: Self.bytes(envelope),
                                      expiresAt: UInt64(expires), receivedAt: UInt64(received)))
            }
            return out
        }
    }

    public func expireDrops(at now: UInt64) async throws -> Int {
        try await bounded("a drop expiry") { client in try await client.withTransaction(logger: self.logger) { c in
            try await c.query("SELECT pg_advisory_xact_lock(41642)", logger: self.logger)
            var n = 0
            for try await removed in try await c.query("""
                WITH removed AS (DELETE FROM relay_drops WHERE expires_at <= \(Int64(clamping: now)) RETURNING 1),
                counted AS (UPDATE relay_drop_count SET total = total - (SELECT count(*) FROM removed) WHERE id = 1)
                SELECT count(*) FROM removed
                """, logger: self.logger).decode(Int64.self) { n = Int(removed) }
            return n
        } }
    }

    public func dropCount() async throws -> Int {
        try await bounded("the drop count") { client in
            var n = 0
            for try await c in try await client.query("SELECT total FROM relay_drop_count WHERE id = 1", logger: self.logger).decode(Int64.self) { n = Int(c) }
            return n
        }
    }
}
