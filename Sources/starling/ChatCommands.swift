import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingNode
import StarlingNostr
import StarlingWire
import StarlingYaOKStore

/// The chat's commands: each parsed here and handed to the messenger or the node.
extension ChatScreen {
    /// Handles one typed line; false means quit.
    func handle(_ raw: String) async -> Bool {
        lastActivity = Date()
        if awaitingSecret {
            await unlock(with: raw)
            return true
        }
        let line = raw.trimmingCharacters(in: .whitespaces)
        guard !line.isEmpty else { return true }
        if let pending = pendingVerify {
            pendingVerify = nil
            if line.lowercased().hasPrefix("y"), let info = await node.peers[pending] {
                await messenger.decide(.verify, about: info.fingerprint, nickname: info.nickname)
                say("* \(await display(pending)) verified")
                return true
            }
        }
        guard line.hasPrefix("/") else {
            if let channel { await say(line, in: channel) } else { await sendPublicText(line) }
            return true
        }
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        switch words[0] {
        case "/msg", "/m", "/dm":
            guard words.count == 3 else { say("usage: /msg NICK text"); return true }
            await messenger.reloadContacts()
            guard let c = await conversation(named: words[1]) else { return true }
            await sendPrivate(words[2], to: c)
        case "/send":
            guard words.count == 3 else { say("usage: /send NICK PATH"); return true }
            guard let to = await peer(named: words[1]) else { return true }
            let path = Self.typedPath(words[2])
            guard let data = FileManager.default.contents(atPath: path) else { say("! cannot read \(path)"); return true }
            do {
                let name = URL(fileURLWithPath: path).lastPathComponent
                let id = try await node.sendFile(name: name, mimeType: nil, content: [UInt8](data), to: to)
                let shownTo = await display(to)
                outgoing[id] = (shownTo, [])
                let text = "file \(name) (\(data.count) bytes)", note = "[\(String(repeating: " ", count: 20))] queued"
                if let screen {
                    screen.append(.init(time: FullScreen.clock(), nick: "you", text: text, messageID: id, mark: note, own: true),
                                  to: await window(to))
                } else {
                    say("[\(Self.clock())] <you → \(shownTo)> \(text)  · \(note)")
                }
                if let fragments = fileSentEarly.removeValue(forKey: id) {
                    await show(MeshNode.Event.fileSent(transferID: id, to: to, fragments: fragments))
                }
            } catch { say("! \(error)") }
        case "/status":
            await status(Array(words.dropFirst()))
        case "/files":
            if receivedFiles.isEmpty { say("* no files received this session") }
            for f in receivedFiles { say("  [\(f.time)] \(f.name) (\(f.size) bytes) from \(f.from): \(f.path)") }
            let folder = store.directory.url.appendingPathComponent("files/incoming").path
            let all = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            say("* \(all.count) file\(all.count == 1 ? "" : "s") in \(folder)")
        case "/contacts":
            await listContacts()
        case "/lock":
            await lock(reason: "locked")
        case "/unlock":
            await beginUnlock()
        case "/history":
            guard words.count >= 2 else { say("usage: /history NAME (a contact, or a peer you wrote with)"); return true }
            await showHistory(of: words[1...].joined(separator: " "))
        case "/who":
            let peers = await node.peers.sorted { $0.value.nickname < $1.value.nickname }
            if peers.isEmpty { say("* nobody yet") }
            let here = Set(peers.map(\.value.fingerprint))
            let blocked = await messenger.trust.filter { $0.value.blocked && !here.contains($0.key) }.compactMap(\.value.nickname).sorted()
            if !blocked.isEmpty { say("* blocked, not here now: \(blocked.map(DisplayText.clean).joined(separator: ", ")) (/unblock NAME)") }
            for (id, info) in peers {
                let favourite = await messenger.isFavorite(info.fingerprint)
                let marks = (favourite ? " ★" : "") + (await messenger.isBlocked(info.fingerprint) ? " (blocked)" : "")
                let can = info.capabilities.map { $0.isEmpty ? "  (announces no capabilities)" : "  can: " + $0.names.joined(separator: ", ") } ?? ""
                say("  \(await display(id))  \(id)  \(info.hops == 1 ? "direct" : "\(info.hops) hops")\(marks)\(can)")
            }
        case "/ping":
            guard words.count >= 2 else { say("usage: /ping NICK (a peer /who lists)"); return true }
            guard let id = await peer(named: words[1]) else { return true }
            await node.ping(id)
            say("* ping \(words[1]) …")
        case "/block", "/unblock", "/fav", "/unfav", "/verify":
            guard words.count >= 2 else { say("usage: \(words[0]) NICK (a peer /who lists)"); return true }
            if words[0] != "/verify", await !node.peers.contains(where: { $0.value.nickname == words[1] }), !words[1].contains("#"),
               let (f, name) = await decided(named: words[1]) {
                // Not here (a blocked peer never is): a contact, or a peer decided about before.
                let change: MessengerCore.TrustChange = ["/block": .block, "/unblock": .unblock, "/fav": .favourite][words[0]] ?? .unfavourite
                await messenger.decide(change, about: f, nickname: name)
                say("* \(words[1]) " + ["/block": "blocked", "/unblock": "unblocked", "/fav": "is a favourite", "/unfav": "is no longer a favourite"][words[0]]!)
                return true
            }
            guard let id = await peer(named: words[1]), let info = await node.peers[id] else { return true }
            switch words[0] {
            case "/block":
                await messenger.decide(.block, about: info.fingerprint, nickname: info.nickname)
                say("* \(words[1]) blocked")
            case "/unblock":
                await messenger.decide(.unblock, about: info.fingerprint, nickname: info.nickname)
                say("* \(words[1]) unblocked")
            case "/fav", "/unfav":
                let on = words[0] == "/fav"
                // The apps' notice goes with our npub: a mutual favourite can reach us over Nostr.
                await messenger.decide(on ? .favourite : .unfavourite, about: info.fingerprint, nickname: info.nickname)
                do {
                    try store.setFavorites(await node.favoriteFingerprints)
                    say(on ? "* \(words[1]) is a favourite: messages for them are held while they are away"
                           : "* \(words[1]) is no longer a favourite")
                } catch { say("! favourites not saved: \(error)") }
            default:
                say("* your fingerprint:\n" + indent(node.identity.fingerprint.grouped))
                say("* \(words[1])'s fingerprint:\n" + indent(info.fingerprint.grouped))
                say("* do they read the same on \(words[1])'s screen? y to mark verified")
                pendingVerify = id
            }
        case "/stats":
            let s = await node.statistics
            let r = await node.refusals
            say("""
              received \(s.received) (direct \(s.direct), relayed \(s.relayed)), average hops \(String(format: "%.1f", s.averageHops))
              relays scheduled \(s.relaysScheduled), executed \(s.relaysExecuted), cancelled \(s.relaysCancelled)
              duplicates blocked \(s.duplicatesBlocked) (\(String(format: "%.0f", s.duplicateRate * 100))%), transmissions \(s.transmissions)
              refused: malformed \(s.malformed), from blocked senders \(s.blockedDropped), TTL clamped \(s.ttlClamped), too large to send \(s.unsendable)
              refused before relaying: forged \(r.forged), unverifiable \(r.unverifiable), stale \(r.stale), our own ID \(r.ownID), oversized \(r.oversized), replayed \(r.replayed), handshakes over budget \(r.handshakeBudget)
              announces refused: signing key not the pinned one \(r.pinMismatch), older than the last taken \(r.outdatedAnnounce)
            """)
        case "/nick":
            guard words.count >= 2 else { say("usage: /nick NAME"); return true }
            let name = words[1...].joined(separator: " ")
            do {
                try store.setNickname(name) // refuses what an announce cannot carry
                await node.rename(name)
                say("* you are now \(name)")
            } catch { say("! \(error)") }
        case "/clear":
            StandardOutput.write(Data("\u{1B}[2J\u{1B}[H".utf8))
        case "/leave", "/quit":
            if await !messenger.isStoreOpen, !quitWarned {
                quitWarned = true
                say("! the store is locked: what came meanwhile is not stored yet. /unlock to keep it, or \(words[0]) again to leave without")
                return true
            }
            await node.leave()
            say("* left")
            return false
        case "/panic":
            await node.wipe()
            try? await messenger.lock()
            do {
                try YaOKStore.reset(directory: store.directory.url)
                try store.wipe()
                say("* keys, sessions and state wiped")
            } catch {
                say("! not everything was wiped (\(error)): delete \(store.directory.url.path) by hand")
            }
            return false
        case "/join", "/j":
            guard words.count >= 2, words[1].hasPrefix("#") else { say("usage: /join #GEOHASH (or /join #mesh)"); return true }
            await join(String(words[1].dropFirst()))
        case "/nostr":
            // How a Nostr contact's messages are wrapped: the apps' variant, or standard NIP-17.
            let known = await messenger.trust.filter { $0.value.npub != nil }
            if words.count == 1 {
                if known.isEmpty { say("* no Nostr contacts yet (a favourite who favourites you back tells you their npub)") }
                for (_, t) in known.sorted(by: { ($0.value.nickname ?? "") < ($1.value.nickname ?? "") }) {
                    say("  \(DisplayText.clean(t.nickname ?? "?"))  \((t.npub ?? "").prefix(20))…  \(t.nostrVariant == "standard" ? "standard NIP-17" : "bitchat")")
                }
                return true
            }
            guard words.count == 3, let variant = ["standard": GiftWrap.Variant.standard, "nip17": .standard, "bitchat": .bitchat][words[2]] else {
                say("usage: /nostr [NICK standard|bitchat]")
                return true
            }
            if let (f, t) = known.filter({ $0.value.nickname == words[1] }).min(by: { $0.key < $1.key }),
               await messenger.setNostrVariant(variant, for: f) {
                say("* messages to \(DisplayText.clean(t.nickname ?? words[1])) over Nostr go as \(variant == .standard ? "standard NIP-17 (plain text, no receipts)" : "bitchat's envelope (as the apps)")")
            } else {
                say("! no Nostr contact named \(words[1]) (/nostr lists them)")
            }
        case "/part":
            guard words.count >= 2, words[1].hasPrefix("#") else { say("usage: /part #GEOHASH"); return true }
            let g = String(words[1].dropFirst()).lowercased()
            await messenger.leave(channel: g)
            if channel == g { channel = nil }
            say("* left #\(g)")
        case "/help":
            say("""
              text              to everyone
              /msg NICK text    privately, end-to-end encrypted (/m, /dm); to a contact
                                who is away, kept and sent when they appear
              /contacts         Ya OK contacts (starling contact add), here or away
              /history NAME     your conversation with a contact or a peer, kept in the encrypted store
              /lock, /unlock    close the store now (with a PIN it also closes when idle); open it again
              /send NICK PATH   a file, privately (~ and "quoted paths" work)
              /files            files received, and where they are
              /who              who is here, how far, ★ favourites, ✓ verified, what they can do
              /ping NICK        round trip and hops to a peer (mesh diagnostics)
              /verify NICK      compare fingerprints and mark verified
              /block NICK, /unblock NICK, /fav NICK, /unfav NICK  (a mutual favourite is reached over Nostr with --nostr)
              /nostr [NICK standard|bitchat]  Nostr contacts; wrap a contact's messages as standard NIP-17
                                (any Nostr client) or as the bitchat apps do (the default)
              /join #GEOHASH    a public location channel over Nostr (--nostr), as the apps run them;
                                /join #mesh comes back, /part #GEOHASH leaves
              /nick NAME        rename yourself
              /status [STATE|sos|clear]  your state, or everyone's (Stately)
              /stats            mesh statistics
              /query NICK, /win N, /close   windows (full screen): Alt-1…9, Ctrl-N/Ctrl-P switch; PgUp/PgDn scroll
              /clear, /leave, /panic (wipe keys, the store and state, then quit), /help
            """)
        default:
            say("! unknown command \(words[0]) (/help)")
        }
        return true
    }
}
