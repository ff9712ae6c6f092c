import CDBus
import Foundation

/// An error from the bus or from the other side of a call.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var message: String
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
    public var description: String { "\(name): \(message)" }

    static func take(_ e: inout CDBus.DBusError) -> DBusError? {
        guard dbus_error_is_set(&e) != 0 else { return nil }
        defer { dbus_error_free(&e) }
        return DBusError(name: e.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                         message: e.message.map { String(cString: $0) } ?? "")
    }
}

/// A message as Swift sees it: where it came from, what it is, its arguments.
public struct DBusMessageInfo: Sendable, CustomStringConvertible {
    public enum Kind: Int32, Sendable { case methodCall = 1, methodReturn = 2, error = 3, signal = 4 }
    public var kind: Kind
    public var path: String?
    public var interface: String?
    public var member: String?
    public var sender: String?
    public var destination: String?
    public var errorName: String?
    public var args: [DBusValue]

    init?(_ m: OpaquePointer) {
        guard let kind = Kind(rawValue: dbus_message_get_type(m)) else { return nil }
        self.kind = kind
        func s(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        path = s(dbus_message_get_path(m))
        interface = s(dbus_message_get_interface(m))
        member = s(dbus_message_get_member(m))
        sender = s(dbus_message_get_sender(m))
        destination = s(dbus_message_get_destination(m))
        errorName = s(dbus_message_get_error_name(m))
        var iter = DBusMessageIter()
        args = dbus_message_iter_init(m, &iter) != 0 ? Marshal.readAll(&iter) : []
    }

    public var description: String {
        "\(kind) \(interface ?? "").\(member ?? "") at \(path ?? "-") from \(sender ?? "-"): \(args)"
    }
}

/// What an exported object answers to a method call.
public enum DBusReply: Sendable {
    case values([DBusValue])
    case error(name: String, message: String)
    /// Not this object's method: the bus answers UnknownMethod.
    case notHandled
}

/// One private connection to a bus (the system bus for BlueZ, or a test's
/// private daemon). A thread of its own reads, writes and dispatches; calls
/// are async and never block a caller's thread; exported objects answer from
/// that thread.
public final class DBusConnection: @unchecked Sendable {
    let raw: OpaquePointer
    public let uniqueName: String
    /// The signals that match rules let through: each use of this property is
    /// a stream of its own (every reader sees every signal).
    public var signals: AsyncStream<DBusMessageInfo> { fanout.subscribe() }
    private let fanout = SignalFanout()
    private let lock = NSLock()
    private var running = true
    private var thread: Thread?
    private var exported: [String: Unmanaged<ObjectBox>] = [:]
    private var filter: Unmanaged<FilterBox>?
    /// Calls waiting for a reply. When the dispatch thread ends (the bus went
    /// away, or close()), each is resumed with Disconnected: libdbus would
    /// only tell them in a dispatch that no longer comes.
    private var waiting: [ObjectIdentifier: ReplyBox] = [:]
    private var dispatching = true

    /// The system bus: $DBUS_SYSTEM_BUS_ADDRESS, else the standard socket.
    public static var systemBusAddress: String {
        ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/var/run/dbus/system_bus_socket"
    }

    public init(address: String) throws {
        _ = Self.threadsReady
        var e = CDBus.DBusError()
        dbus_error_init(&e)
        guard let c = dbus_connection_open_private(address, &e) else {
            throw DBusError.take(&e) ?? DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "cannot connect to \(address)")
        }
        guard dbus_bus_register(c, &e) != 0 else {
            dbus_connection_close(c)
            dbus_connection_unref(c)
            throw DBusError.take(&e) ?? DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "cannot register with the bus")
        }
        dbus_connection_set_exit_on_disconnect(c, 0)
        raw = c
        uniqueName = dbus_bus_get_unique_name(c).map { String(cString: $0) } ?? ""
        let box = Unmanaged.passRetained(FilterBox(fanout: fanout))
        filter = box
        dbus_connection_add_filter(c, { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            if dbus_message_get_type(message) == DBusMessageInfo.Kind.signal.rawValue, let info = DBusMessageInfo(message) {
                Unmanaged<FilterBox>.fromOpaque(data).takeUnretainedValue().fanout.yield(info)
            }
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }, box.toOpaque(), nil)
        // The thread holds the connection only for one turn at a time, so that a
        // connection nobody holds any more is closed by its deinit.
        let t = Thread { [weak self] in
            while let connection = self, connection.turn() {}
        }
        t.name = "dbus"
        thread = t
        t.start()
    }

    private static let threadsReady: Bool = dbus_threads_init_default() != 0

    /// One turn of reading, writing and dispatching; false once stopped or disconnected.
    private func turn() -> Bool {
        guard isRunning, dbus_connection_read_write_dispatch(raw, 50) != 0 else {
            fanout.finish()
            failWaiting()
            return false
        }
        return true
    }

    /// No more dispatch: every call still waiting fails now, and later ones at once.
    private func failWaiting() {
        let all = lock.withLock { () -> [ReplyBox] in
            dispatching = false
            defer { waiting = [:] }
            return Array(waiting.values)
        }
        for box in all { box.fail(DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the bus connection was lost")) }
    }

    private var isRunning: Bool { lock.withLock { running } }

    /// Whether calls can still be answered: false once the bus went away or close() was called.
    public var isConnected: Bool { lock.withLock { dispatching && running } }

    /// Stops the dispatch thread and closes the connection.
    public func close() {
        let was = lock.withLock { () -> Bool in
            let r = running
            running = false
            return r
        }
        guard was else { return }
        // Wait for the dispatch thread's last turn (unless this is it: a deinit there).
        if let t = thread, t != Thread.current { while !t.isFinished { usleep(1_000) } }
        fanout.finish()
        failWaiting()
        for path in lock.withLock({ Array(exported.keys) }) { unexport(path) }
        dbus_connection_close(raw)
        if let f = filter { f.release() }
        dbus_connection_unref(raw)
    }

    deinit { close() }

    // MARK: Calls

    /// Calls a method and waits (without blocking a thread) for its reply.
    public func call(_ destination: String, _ path: String, _ interface: String, _ method: String,
                     _ args: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        guard let m = dbus_message_new_method_call(destination, path, interface, method) else {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "bad destination, path, interface or method")
        }
        defer { dbus_message_unref(m) }
        try Self.append(args, to: m)
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try await withCheckedThrowingContinuation { continuation in
            let reply = ReplyBox(continuation)
            let key = ObjectIdentifier(reply)
            // Registered before it is sent: a disconnect from here on fails it.
            guard lock.withLock({ () -> Bool in
                guard dispatching else { return false }
                waiting[key] = reply
                return true
            }) else {
                reply.fail(DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the bus connection was lost"))
                return
            }
            reply.done = { [weak self] in self?.lock.withLock { _ = self?.waiting.removeValue(forKey: key) } }
            var pending: OpaquePointer?
            guard dbus_connection_send_with_reply(raw, m, &pending, ms) != 0, let pending else {
                reply.fail(DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "not connected"))
                return
            }
            let box = Unmanaged.passRetained(reply)
            _ = dbus_pending_call_set_notify(pending, { p, data in
                guard let p, let data else { return }
                Unmanaged<ReplyBox>.fromOpaque(data).takeUnretainedValue().complete(p)
            }, box.toOpaque(), { data in
                if let data { Unmanaged<ReplyBox>.fromOpaque(data).release() }
            })
            // A reply that came before the notify was set.
            if dbus_pending_call_get_completed(pending) != 0 { box.takeUnretainedValue().complete(pending) }
            dbus_pending_call_unref(pending)
        }
    }

    static func append(_ args: [DBusValue], to m: OpaquePointer) throws {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(m, &iter)
        for a in args {
            guard Marshal.append(a, to: &iter) else {
                throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "cannot marshal \(a) (\(a.signature))")
            }
        }
    }

    /// Sends a signal from `path`.
    public func emit(_ path: String, _ interface: String, _ name: String, _ args: [DBusValue]) throws {
        guard let m = dbus_message_new_signal(path, interface, name) else {
            throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "bad path, interface or name")
        }
        defer { dbus_message_unref(m) }
        try Self.append(args, to: m)
        guard dbus_connection_send(raw, m, nil) != 0 else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot queue the signal")
        }
    }

    /// Receives the signals a match rule selects (on ``signals``).
    public func addMatch(_ rule: String) async throws {
        _ = try await call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", [.string(rule)])
    }

    /// Asks for a well-known name (a test's service).
    public func requestName(_ name: String) async throws {
        let r = try await call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                               [.string(name), .uint32(4)]) // DBUS_NAME_FLAG_DO_NOT_QUEUE
        guard r.first?.int == 1 else { throw DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "name \(name) is taken") }
    }

    // MARK: Exported objects

    /// Answers method calls to `path` (and below it, with `subtree`) with `handler`,
    /// called on the dispatch thread.
    public func export(_ path: String, subtree: Bool = false, _ handler: @escaping @Sendable (DBusMessageInfo) -> DBusReply) throws {
        let box = Unmanaged.passRetained(ObjectBox(handler: handler))
        var vtable = DBusObjectPathVTable()
        vtable.message_function = { connection, message, data in
            guard let connection, let message, let data,
                  dbus_message_get_type(message) == DBusMessageInfo.Kind.methodCall.rawValue,
                  let info = DBusMessageInfo(message) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            let reply = Unmanaged<ObjectBox>.fromOpaque(data).takeUnretainedValue().handler(info)
            let out: OpaquePointer?
            switch reply {
            case .notHandled:
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            case let .error(name, text):
                out = dbus_message_new_error(message, name, text)
            case let .values(values):
                out = dbus_message_new_method_return(message)
                if let out, (try? DBusConnection.append(values, to: out)) == nil {
                    dbus_message_unref(out)
                    let e = dbus_message_new_error(message, "org.freedesktop.DBus.Error.Failed", "the reply could not be marshalled")
                    if let e { dbus_connection_send(connection, e, nil); dbus_message_unref(e) }
                    return DBUS_HANDLER_RESULT_HANDLED
                }
            }
            if let out {
                if dbus_message_get_no_reply(message) == 0 { dbus_connection_send(connection, out, nil) }
                dbus_message_unref(out)
            }
            return DBUS_HANDLER_RESULT_HANDLED
        }
        var e = CDBus.DBusError()
        dbus_error_init(&e)
        let ok = subtree ? dbus_connection_try_register_fallback(raw, path, &vtable, box.toOpaque(), &e)
                         : dbus_connection_try_register_object_path(raw, path, &vtable, box.toOpaque(), &e)
        guard ok != 0 else {
            box.release()
            throw DBusError.take(&e) ?? DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "cannot export \(path)")
        }
        lock.withLock { exported[path] = box }
    }

    public func unexport(_ path: String) {
        guard let box = lock.withLock({ exported.removeValue(forKey: path) }) else { return }
        dbus_connection_unregister_object_path(raw, path)
        box.release()
    }
}

final class FilterBox {
    let fanout: SignalFanout
    init(fanout: SignalFanout) { self.fanout = fanout }
}

/// Hands each signal to every current reader.
final class SignalFanout: @unchecked Sendable {
    private let lock = NSLock()
    private var readers: [Int: AsyncStream<DBusMessageInfo>.Continuation] = [:]
    private var next = 0
    private var finished = false

    func subscribe() -> AsyncStream<DBusMessageInfo> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusMessageInfo.self, bufferingPolicy: .bufferingNewest(4_096))
        let id: Int? = lock.withLock {
            guard !finished else { return nil }
            next += 1
            readers[next] = continuation
            return next
        }
        guard let id else { continuation.finish(); return stream }
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.readers.removeValue(forKey: id) } }
        return stream
    }

    func yield(_ info: DBusMessageInfo) {
        for c in lock.withLock({ Array(readers.values) }) { c.yield(info) }
    }

    func finish() {
        let all = lock.withLock { () -> [AsyncStream<DBusMessageInfo>.Continuation] in
            finished = true
            defer { readers = [:] }
            return Array(readers.values)
        }
        for c in all { c.finish() }
    }
}

final class ObjectBox {
    let handler: @Sendable (DBusMessageInfo) -> DBusReply
    init(handler: @escaping @Sendable (DBusMessageInfo) -> DBusReply) { self.handler = handler }
}

/// Completes one call exactly once, whichever of the notify, the caller's
/// check, a lost connection and its own end comes first.
final class ReplyBox: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<[DBusValue], Error>?
    /// Told once when the call is resumed (the connection forgets it).
    var done: (@Sendable () -> Void)?
    init(_ c: CheckedContinuation<[DBusValue], Error>) { continuation = c }

    /// The continuation, taken once; nil after.
    private func take() -> CheckedContinuation<[DBusValue], Error>? {
        let (c, d) = lock.withLock { () -> (CheckedContinuation<[DBusValue], Error>?, (@Sendable () -> Void)?) in
            defer { continuation = nil; done = nil }
            return (continuation, continuation == nil ? nil : done)
        }
        d?()
        return c
    }

    func fail(_ error: DBusError) {
        take()?.resume(throwing: error)
    }

    /// A box freed with its call unanswered (libdbus dropped the pending call) never leaves its waiter waiting.
    deinit {
        continuation?.resume(throwing: DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the call was dropped unanswered"))
    }

    func complete(_ pending: OpaquePointer) {
        guard let c = take() else { return }
        guard let reply = dbus_pending_call_steal_reply(pending) else {
            c.resume(throwing: DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "no reply"))
            return
        }
        defer { dbus_message_unref(reply) }
        guard let info = DBusMessageInfo(reply) else {
            c.resume(throwing: DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "an unreadable reply"))
            return
        }
        if info.kind == .error {
            c.resume(throwing: DBusError(name: info.errorName ?? "org.freedesktop.DBus.Error.Failed", message: info.args.first?.string ?? ""))
        } else {
            c.resume(returning: info.args)
        }
    }
}
