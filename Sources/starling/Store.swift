import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingNode
import StarlingWire
import StarlingYaOK
import StarlingStore
import StarlingMessenger
import StarlingMessengerAPI

/// Opening the encrypted store from the command line: the identity (its
/// passphrase if the key file is sealed), then the store's own secret when
/// it has a PIN or passphrase (STARLING_PIN, else asked for on the terminal).
struct StoreAccess {
    let identityStore: IdentityStore
    let identity: Identity
    let userID: UserID
    let nickname: String

    /// Opens the store of a node that already holds its identity. A wrong PIN
    /// typed at a terminal is said, and asked again (the keyring's lockout
    /// counts each); from STARLING_PIN, or with no terminal, it fails in words.
    /// The store never opens half.
    static func open(directory: URL, identity: Identity) throws -> MessengerStore {
        let fromEnvironment = !(ProcessInfo.processInfo.environment["STARLING_PIN"] ?? "").isEmpty
        for _ in 0..<10 {
            let protection: Keyring.Protection
            switch MessengerStore.protection(in: directory) {
            case nil, .keyFile?: protection = .keyFile(identity)
            case .pin?: protection = .pin(try secret(prompt: "PIN for the store: "))
            case .passphrase?: protection = .passphrase(try secret(prompt: "Store passphrase: "))
            }
            do {
                return try MessengerStore.open(directory: directory, protection: protection)
            } catch let error as Keyring.Error {
                guard !fromEnvironment, isatty(STDIN_FILENO) == 1 else { throw RuntimeFailure(error.description) }
                switch error {
                case .wrongSecret, .badPIN, .badPassphrase:
                    StandardError.write(Data("\(error.description)\n".utf8))
                case let .lockedOut(seconds):
                    StandardError.write(Data("\(error.description): waiting\n".utf8))
                    Thread.sleep(forTimeInterval: Double(seconds))
                default:
                    throw RuntimeFailure(error.description)
                }
            } catch let error as MessengerStore.Error {
                throw RuntimeFailure(error.description)
            }
        }
        throw RuntimeFailure("the store stayed locked after 10 tries: run again when you have the PIN or passphrase")
    }

    init(dataDir: String?) throws {
        identityStore = IdentityStore(directory: DataDirectory(explicit: dataDir))
        try UserError.writableDirectory(identityStore.directory)
        identity = try identityStore.loadOrCreate(passphrase: try Passphrase.forStoredKey(identityStore)).identity
        userID = try identityStore.userID()
        nickname = identityStore.nickname(or: identity)
    }

    var directory: URL { identityStore.directory.url }

    /// The store's protection for this identity, asking for the secret when
    /// one is set.
    func protection() throws -> Keyring.Protection {
        switch MessengerStore.protection(in: directory) {
        case nil, .keyFile?: return .keyFile(identity)
        case .pin?: return .pin(try Self.secret(prompt: "PIN: "))
        case .passphrase?: return .passphrase(try Self.secret(prompt: "Store passphrase: "))
        }
    }

    func open() throws -> MessengerStore {
        do {
            return try MessengerStore.open(directory: directory, protection: try protection())
        } catch let error as Keyring.Error {
            throw RuntimeFailure(error.description)
        } catch let error as MessengerStore.Error {
            throw RuntimeFailure(error.description)
        }
    }

    /// Our own contact card.
    func card() throws -> ContactCard {
        let name = DisplayName.problem(nickname) == nil ? nickname : String(nickname.prefix(64))
        return try ContactCard(identity: identity, userID: userID, displayName: name)
    }

    /// STARLING_PIN, else a prompt without echo.
    /// `check` judges a new secret at its first entry (before "Again:").
    static func secret(prompt: String, environment: String = "STARLING_PIN", confirm: Bool = false,
                       check: (String) throws -> Void = { _ in }) throws -> String {
        if let env = ProcessInfo.processInfo.environment[environment], !env.isEmpty {
            try check(env)
            return env
        }
        guard isatty(STDIN_FILENO) == 1, let first = getpass(prompt).map({ String(cString: $0) }) else {
            // Asking for a new secret is not a locked store: say what is asked for.
            throw RuntimeFailure(confirm ? "no terminal to type the \(prompt.prefix { $0 != "(" && $0 != ":" }.trimmingCharacters(in: .whitespaces).lowercased()) in: run in a terminal, or set \(environment) to it"
                                         : "the store is locked: run in a terminal, or set \(environment)")
        }
        try check(first)
        if confirm {
            guard let again = getpass("Again: ").map({ String(cString: $0) }), again == first else {
                throw RuntimeFailure("the two entries differ")
            }
        }
        return first
    }
}

/// Errors a person can cause, said in words.
enum UserError {
    /// The data directory exists and is writable, or can be made.
    static func writableDirectory(_ directory: DataDirectory) throws {
        do {
            try directory.create()
        } catch {
            throw RuntimeFailure("cannot create the data directory \(directory.url.path): \(reason(error)). Choose another with --data-dir.")
        }
        guard access(directory.url.path, W_OK) == 0 else {
            throw RuntimeFailure("the data directory \(directory.url.path) is not writable: fix its permissions, or choose another with --data-dir.")
        }
    }

    static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if let posix = ns.userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        if ns.domain == NSCocoaErrorDomain, ns.code == 513 || ns.code == 642 { return "permission denied" }
        return ns.localizedDescription
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back up the encrypted store now (a daily backup is also made; 7 are kept).")

    @Option(name: .long, help: "The data directory (default: $XDG_DATA_HOME/starling).")
    var dataDir: String?

    func run() async throws {
        // Made by the data directory's messenger (a running daemon's, or one here): never a second handle on the store.
        let (made, daemon) = try await OneShot.withMessenger(dataDir: dataDir) { client, daemon in (try await client.backup(), daemon) }
        print("backed up to \(made.path)" + (daemon ? " (through the daemon)" : ""))
        print("\(made.kept) backup\(made.kept == 1 ? "" : "s") kept (7 at most)")
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replace the encrypted store with a backup (the newest good one, or --from FILE).",
        discussion: "Messages written after that backup are lost; the identity is kept. Beside a running daemon its messenger does it (every face sees the store close and open again).")

    @Option(name: .long, help: "The data directory (default: $XDG_DATA_HOME/starling).")
    var dataDir: String?

    @Option(name: .long, help: "The backup file to restore.")
    var from: String?

    @Flag(help: "Do not ask.")
    var yes = false

    func run() async throws {
        if let from, !FileManager.default.fileExists(atPath: from) {
            throw RuntimeFailure("\(from) does not exist: give a backup file (`ls` the data directory's backups/), or leave --from out for the newest")
        }
        if !yes {
            // The store is replaced: what came after the backup is gone. Asked, as reset asks.
            guard isatty(STDIN_FILENO) == 1 else { throw RuntimeFailure("restore replaces the store with a backup (messages after it are lost): confirm with --yes") }
            print("Replace the store in \(DataDirectory(explicit: dataDir).url.path) with \(from ?? "the newest good backup")? Messages after it are lost; the identity stays. [y/N] ",
                  terminator: "")
            guard readLine()?.lowercased().hasPrefix("y") == true else { throw ExitCode(1) }
        }
        // The data directory's messenger does it (a running daemon's, or one here with the store closed).
        let from = self.from.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        let (used, daemon) = try await OneShot.withMessenger(dataDir: dataDir, opensStore: false) { client, daemon in
            var secret: String?
            switch MessengerStore.protection(in: DataDirectory(explicit: dataDir).url) {
            case .pin?: secret = try StoreAccess.secret(prompt: "PIN: ")
            case .passphrase?: secret = try StoreAccess.secret(prompt: "Store passphrase: ")
            case nil, .keyFile?: secret = nil
            }
            return (try await client.restore(from: from, secret: secret), daemon)
        }
        print("restored from \(used); messages after it are lost, the identity is kept" + (daemon ? " (through the daemon)" : ""))
    }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete the encrypted store and its backups: contacts, messages, trust decisions. The identity stays.")

    @Option(name: .long, help: "The data directory (default: $XDG_DATA_HOME/starling).")
    var dataDir: String?

    @Flag(help: "Do not ask.")
    var yes = false

    func run() throws {
        let directory = DataDirectory(explicit: dataDir)
        if !yes {
            guard isatty(STDIN_FILENO) == 1 else { throw RuntimeFailure("reset deletes the store: confirm with --yes") }
            print("Delete all contacts, messages and trust decisions in \(directory.url.path)? The identity stays. [y/N] ",
                  terminator: "")
            guard readLine()?.lowercased().hasPrefix("y") == true else { throw ExitCode(1) }
        }
        let lock = try holdDirectory(directory)
        defer { withExtendedLifetime(lock) {} }
        try MessengerStore.reset(directory: directory.url)
        print("the store is reset; the identity is kept")
    }
}

struct Pin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lock the encrypted store with a PIN (4–6 digits), a passphrase, or neither.",
        discussion: """
        Without a PIN the store's key is sealed with the identity's key file. A PIN \
        keeps out someone at the keyboard: 5 wrong PINs lock for 30 s. It does not \
        keep out someone who copies the files (a 6-digit PIN can be guessed offline \
        in hours): use --passphrase for that. The new PIN or passphrase is asked for \
        twice, or read from STARLING_NEW_PIN (either); the current one from STARLING_PIN.
        """)

    @Option(name: .long, help: "The data directory (default: $XDG_DATA_HOME/starling).")
    var dataDir: String?

    @Flag(help: "Set a passphrase (10 or more characters) instead of a PIN.")
    var passphrase = false

    @Flag(help: "Remove the PIN or passphrase (the key file seals the store again).")
    var remove = false

    func run() async throws {
        // The messenger changes it (a running daemon's, or one here, the store left closed): a daemon
        // locks it after its idle time from now on (issue 54: a PIN set behind it was taken at its next start).
        try await OneShot.withMessenger(dataDir: dataDir, opensStore: false) { client, daemon in try await change(client, daemon: daemon) }
    }
}

extension Pin {
    /// The current PIN or passphrase (when there is one) and the new one, asked for, and the change made by the messenger.
    func change(_ client: any MessengerClient, daemon: Bool) async throws {
        let kind = MessengerStore.protection(in: DataDirectory(explicit: dataDir).url)
        var current: String?
        if kind == .pin || kind == .passphrase {
            current = try StoreAccess.secret(prompt: kind == .passphrase ? "Current passphrase: " : "Current PIN: ", environment: "STARLING_PIN",
                                             confirm: false) { _ in }
        }
        let new: StoreProtection
        if remove {
            new = .keyFile
        } else {
            let passphrase = self.passphrase
            let secret = try StoreAccess.secret(prompt: passphrase ? "New passphrase (10 or more characters): " : "New PIN (4–6 digits): ",
                                                environment: "STARLING_NEW_PIN", confirm: true) { typed in
                do { try Keyring.validate(passphrase ? .passphrase(typed) : .pin(typed)) } catch {
                    throw RuntimeFailure("\(error)" + (passphrase ? Passphrase.why : ""))
                }
            }
            new = passphrase ? .passphrase(secret) : .pin(secret)
        }
        do { try await client.changeProtection(current: current, to: new) } catch let e as MessengerClientError { throw RuntimeFailure(e.description) }
        print((remove ? "the store is sealed with the identity key (no PIN)"
              : passphrase ? "the store is locked with a passphrase" : "the store is locked with a PIN")
              + (daemon ? " (through the daemon, which locks it when no one has used a face for a while)" : ""))
    }
}

/// The data directory's lock for a command that replaces the store under a
/// running node (restore, reset): refused while a node runs there.
func holdDirectory(_ directory: DataDirectory) throws -> DirectoryLock {
    do {
        return try DirectoryLock(directory)
    } catch let held as DirectoryLock.Held {
        throw RuntimeFailure(held.description)
    }
}
