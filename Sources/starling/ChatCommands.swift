import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingNostr
import StarlingWire
import StarlingStore

/// The chat's commands: each parsed here and handed to the messenger or the node.
extension ChatScreen {
    /// Handles one typed line; false means quit.
    func handle(_ raw: String) async -> Bool {
        await noteActivity()
        if awaitingSecret {
            await unlock(with: raw)
            return true
        }
        let line = raw.trimmingCharacters(in: .whitespaces)
        guard !line.isEmpty else { return true }
        if let pending = pendingVerify {
            pendingVerify = nil
            if line.lowercased().hasPrefix("y"), let info = await peerTable()[pending] {
                guard await ask(false, { try await client.decide(.verify, about: info.fingerprint, nickname: info.nickname); return true }) else { return true }
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
            guard let c = await conversation(named: words[1]) else { return true }
            await sendPrivate(words[2], to: c)
        case "/send":
            guard words.count == 3 else { say("usage: /send NICK PATH"); return true }
            guard let to = await peer(named: words[1]) else { return true }
            let path = Self.typedPath(words[2])
            guard FileManager.default.isReadableFile(atPath: path),
                  let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? Int else { say("! cannot read \(path)"); return true }
            sendsInFlight += 1
            do {
                let name = URL(fileURLWithPath: path).lastPathComponent
                let id = try await client.sendFile(at: URL(fileURLWithPath: path), to: to)
                let shownTo = await display(to)
                outgoing[id] = (shownTo, [])
                let text = "file \(name) (\(size) bytes)", note = "[\(String(repeating: " ", count: 20))] queued"
                if let screen {
                    screen.append(.init(time: FullScreen.clock(), nick: "you", text: text, messageID: id, mark: note, own: true),
                                  to: await window(to))
                } else {
                    say("[\(Self.clock())] <you → \(shownTo)> \(text)  · \(note)")
                }
            } catch { say("! \(error)") }
            sendsInFlight -= 1
            await showFileEventsMeanwhile()
        case "/board":
            await board(Array(words.dropFirst()))
        case "/group", "/g":
            await group(Array(words.dropFirst()))
        case "/accept" where words.count > 1 && words[1].hasPrefix("npub1"):
            // A stranger's request over Nostr (a file offer is named otherwise).
            guard words.count == 3 else { say("usage: /accept NPUB NAME (the name they get here)"); return true }
            do {
                try await client.acceptRequest(words[1], name: words[2])
                say("* \(DisplayText.clean(words[2])) (\(words[1].prefix(16))…) is a contact: /msg \(DisplayText.clean(words[2])) TEXT answers over Nostr")
            } catch { say("! \(error)") }
        case "/block" where words.count > 1 && words[1].hasPrefix("npub1"):
            do {
                try await client.blockRequest(words[1])
                say("* \(words[1].prefix(16))… blocked: nothing from them is shown")
            } catch { say("! \(error)") }
        case "/requests":
            let waiting = await ask([]) { try await client.requests() }
            if waiting.isEmpty { say("* no requests: nobody who is not a contact has written over Nostr") }
            for r in waiting {
                say("* \(r.npub), \(r.messages.count) message\(r.messages.count == 1 ? "" : "s"):")
                for m in r.messages { say("    \(DisplayText.clean(m.text))") }
            }
            if !waiting.isEmpty { say("  /accept NPUB NAME makes one a contact; /block NPUB refuses them") }
        case "/accept", "/decline":
            await answerOffer(accept: words[0] == "/accept", words.count > 1 ? words[1...].joined(separator: " ") : nil)
        case "/status":
            await status(Array(words.dropFirst()))
        case "/files":
            if receivedFiles.isEmpty { say("* no files received this session") }
            for f in receivedFiles { say("  [\(f.time)] \(f.name) (\(f.size) bytes) from \(f.from): \(f.path)") }
            let folder = directory.appendingPathComponent("files/incoming").path
            let all = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            say("* \(all.count) file\(all.count == 1 ? "" : "s") in \(folder)")
        case "/contacts":
            await listContacts()
        case "/lock":
            await lock()
        case "/unlock":
            await beginUnlock()
        case "/history":
            guard words.count >= 2 else { say("usage: /history NAME (a contact, or a peer you wrote with)"); return true }
            await showHistory(of: words[1...].joined(separator: " "))
        case "/who":
            let peers = await peerTable().sorted { $0.value.nickname < $1.value.nickname }
            if peers.isEmpty { say("* nobody yet") }
            let here = Set(peers.map(\.value.fingerprint))
            let blocked = await ask([:]) { try await client.trust() }.filter { $0.value.blocked && !here.contains($0.key) }.compactMap(\.value.nickname).sorted()
            if !blocked.isEmpty { say("* blocked, not here now: \(blocked.map(DisplayText.clean).joined(separator: ", ")) (/unblock NAME)") }
            for (id, info) in peers {
                let marks = (info.favorite ? " ★" : "") + (info.verified ? " ✓" : "") + (info.blocked ? " (blocked)" : "")
                    + (info.vouchedBy.isEmpty ? "" : " (vouched for by " + info.vouchedBy.map(DisplayText.clean).joined(separator: ", ") + ", whom you verified)")
                let can = info.capabilities.map { $0.isEmpty ? "  (announces no capabilities)" : "  can: " + $0.joined(separator: ", ") } ?? ""
                say("  \(await display(id))  \(id)  \(info.hops == 1 ? "direct" : "\(info.hops) hops")\(marks)\(can)")
            }
        case "/ping":
            guard words.count >= 2 else { say("usage: /ping NICK (a peer /who lists)"); return true }
            guard let id = await peer(named: words[1]) else { return true }
            guard await ask(false, { try await client.ping(id); return true }) else { return true }
            say("* ping \(words[1]) …")
        case "/block", "/unblock", "/fav", "/unfav", "/verify":
            guard words.count >= 2 else { say("usage: \(words[0]) NICK (a peer /who lists)"); return true }
            if words[0] != "/verify", await !peerTable().contains(where: { $0.value.nickname == words[1] }), !words[1].contains("#"),
               let (f, name) = await decided(named: words[1]) {
                // Not here (a blocked peer never is): a contact, or a peer decided about before.
                let change: MessengerCore.TrustChange = ["/block": .block, "/unblock": .unblock, "/fav": .favourite][words[0]] ?? .unfavourite
                guard await ask(false, { try await client.decide(change, about: f, nickname: name); return true }) else { return true }
                say("* \(words[1]) " + ["/block": "blocked", "/unblock": "unblocked", "/fav": "is a favourite", "/unfav": "is no longer a favourite"][words[0]]!)
                return true
            }
            guard let id = await peer(named: words[1]), let info = await peerTable()[id] else { return true }
            switch words[0] {
            case "/block":
                guard await ask(false, { try await client.decide(.block, about: info.fingerprint, nickname: info.nickname); return true }) else { return true }
                say("* \(words[1]) blocked")
            case "/unblock":
                guard await ask(false, { try await client.decide(.unblock, about: info.fingerprint, nickname: info.nickname); return true }) else { return true }
                say("* \(words[1]) unblocked")
            case "/fav", "/unfav":
                let on = words[0] == "/fav"
                // The apps' notice goes with our npub: a mutual favourite can reach us over Nostr.
                guard await ask(false, { try await client.decide(on ? .favourite : .unfavourite, about: info.fingerprint, nickname: info.nickname); return true })
                else { return true }
                say(on ? "* \(words[1]) is a favourite: messages for them are held while they are away"
                       : "* \(words[1]) is no longer a favourite")
            default:
                say("* your fingerprint:\n" + indent(me.fingerprint.grouped))
                say("* \(words[1])'s fingerprint:\n" + indent(info.fingerprint.grouped))
                say("* do they read the same on \(words[1])'s screen? y to mark verified")
                pendingVerify = id
            }
        case "/stats":
            guard let both = await ask(nil, { try await client.statistics() }) else { return true }
            let s = both.mesh, r = both.refusals
            say("""
              received \(s.received) (direct \(s.direct), relayed \(s.relayed)), average hops \(String(format: "%.1f", s.averageHops))
              relays scheduled \(s.relaysScheduled), executed \(s.relaysExecuted), cancelled \(s.relaysCancelled)
              duplicates blocked \(s.duplicatesBlocked) (\(String(format: "%.0f", s.duplicateRate * 100))%), transmissions \(s.transmissions)
              refused: malformed \(s.malformed), from blocked senders \(s.blockedDropped), TTL clamped \(s.ttlClamped), too large to send \(s.unsendable)
              refused before relaying: forged \(r.forged), unverifiable \(r.unverifiable), stale \(r.stale), our own ID \(r.ownID), oversized \(r.oversized), replayed \(r.replayed), handshakes over budget \(r.handshakeBudget)
              announces refused: signing key not the pinned one \(r.pinMismatch), older than the last taken \(r.outdatedAnnounce)
              refused, not kept: board posts \(r.board), prekey bundles \(r.prekeys), voice packets that do not decode \(r.voice)
            """)
        case "/nick":
            guard words.count >= 2 else { say("usage: /nick NAME"); return true }
            let name = words[1...].joined(separator: " ")
            do {
                try await client.rename(name) // refuses what an announce cannot carry
                await refreshMe()
                say("* you are now \(name)")
            } catch { say("! \(error)") }
        case "/clear":
            StandardOutput.write(Data("\u{1B}[2J\u{1B}[H".utf8))
        case "/leave", "/quit":
            await refreshMe()
            if local != nil, !me.storeOpen, !quitWarned {
                quitWarned = true
                say("! the store is locked: what came meanwhile is not stored yet. /unlock to keep it, or \(words[0]) again to leave without")
                return true
            }
            guard let local else {
                say("* left the chat; the daemon stays on the mesh")
                return false
            }
            await local.node.leave()
            say("* left")
            return false
        case "/panic":
            guard let local else {
                say("! /panic wipes the node's keys, and the daemon runs the node: stop the daemon, then run `starling chat` and /panic again")
                return true
            }
            await local.node.wipe()
            try? await local.messenger.lock()
            do {
                try MessengerStore.reset(directory: directory)
                try local.identityStore.wipe()
                say("* keys, sessions and state wiped")
            } catch {
                say("! not everything was wiped (\(error)): delete \(directory.path) by hand")
            }
            return false
        case "/join", "/j":
            guard words.count >= 2, words[1].hasPrefix("#") else { say("usage: /join #GEOHASH (or /join #mesh)"); return true }
            await join(String(words[1].dropFirst()))
        case "/nostr":
            // How a Nostr contact's messages are wrapped: the apps' variant, or standard NIP-17.
            let known = await ask([:]) { try await client.trust() }.filter { $0.value.npub != nil }
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
               await ask(false, { try await client.setNostrVariant(variant, for: f) }) {
                say("* messages to \(DisplayText.clean(t.nickname ?? words[1])) over Nostr go as \(variant == .standard ? "standard NIP-17 (plain text, no receipts)" : "bitchat's envelope (as the apps)")")
            } else {
                say("! no Nostr contact named \(words[1]) (/nostr lists them)")
            }
        case "/part":
            guard words.count >= 2, words[1].hasPrefix("#") else { say("usage: /part #GEOHASH"); return true }
            let g = String(words[1].dropFirst()).lowercased()
            guard await ask(false, { try await client.leave(channel: g); return true }) else { return true }
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
              /accept [ID|NAME], /decline [ID|NAME]  a large file offered over the network (the newest
                                when none is named); files up to --accept-up-to are taken without asking
              /requests         strangers' messages over Nostr, waiting for your answer
              /accept NPUB NAME, /block NPUB   make one a contact named NAME (their messages go to
                                your conversation), or refuse them for good
              /board            the mesh's board: signed posts every node keeps up to 7 days
              /board post TEXT, /board urgent TEXT, /board delete ID   post (for a day), or delete yours
              /group            your private groups (as the apps make them: at most 16, sealed for members)
              /group create NAME NICK…, /group invite NAME NICK, /group remove NAME NICK  (the creator's)
              /group say NAME TEXT, /group leave NAME   in full screen each group has a window, &NAME
              /group history NAME   what was said in a group, each line with its author, kept across restarts
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

extension ChatScreen {
    /// `/board`: the posts; `/board post TEXT`, `/board urgent TEXT`, `/board delete ID`.
    func board(_ words: [String]) async {
        switch words.first {
        case nil:
            let entries: [BoardEntry]
            do { entries = try await client.boardPosts() } catch { say("! \(error)"); return }
            if entries.isEmpty { say("* the board is empty (/board post TEXT)") }
            for e in entries {
                let p = e.post
                say("  [\(Self.day(p.createdAt))] \(EventPrinter.boardLine(e)) · \(p.postID.hexString.prefix(8)) until \(Self.day(p.expiresAt))")
            }
        case "post"?, "urgent"?:
            guard words.count == 2 else { say("usage: /board \(words[0]) TEXT"); return }
            do {
                let p = try await client.postToBoard(words[1], urgent: words[0] == "urgent", days: 1)
                say("* posted on the board for a day (\(p.postID.hexString.prefix(8))): \(DisplayText.clean(p.content))")
            } catch { say("! \(error)") }
        case "delete"?:
            guard words.count == 2 else { say("usage: /board delete ID"); return }
            do {
                try await client.deleteBoardPost(words[1])
                say("* deleted from the board")
            } catch { say("! \(error)") }
        default:
            say("usage: /board, /board post TEXT, /board urgent TEXT, /board delete ID")
        }
    }

    /// `/group`: the groups; `/group create NAME NICK…`, `invite NAME NICK`,
    /// `remove NAME NICK`, `say NAME TEXT`, `leave NAME`. A name is one word
    /// (a group named with spaces is named by its ID's first digits).
    func group(_ words: [String]) async {
        let verb = words.first?.lowercased()
        let rest = words.count > 1 ? words[1].split(separator: " ", omittingEmptySubsequences: true).map(String.init) : []
        let usage = "usage: /group, /group create NAME NICK…, /group invite NAME NICK, /group remove NAME NICK, /group say NAME TEXT, /group history NAME, /group leave NAME"
        do {
            switch verb {
            case nil, "list"?:
                let groups = try await client.groups()
                if groups.isEmpty { say("* you are in no group (/group create NAME NICK…)") }
                let me = try await client.summary().fingerprint.hex
                for g in groups {
                    say("  &\(DisplayText.clean(g.name)) · \(g.groupID.prefix(8)) · epoch \(g.epoch)\(g.creator == me ? " · yours" : ""): "
                        + g.members.map { DisplayText.clean($0.nickname) + ($0.fingerprint == g.creator ? " (creator)" : "") }.joined(separator: ", "))
                }
            case "create"?:
                guard let name = rest.first else { say("usage: /group create NAME NICK…"); return }
                let g = try await client.createGroup(name, members: Array(rest.dropFirst()))
                say("* you made \(DisplayText.clean(g.name)): " + g.members.map { DisplayText.clean($0.nickname) }.joined(separator: ", "))
                screen?.open(Self.groupWindow(g.name))
            case "invite"?, "remove"?:
                guard rest.count == 2 else { say("usage: /group \(verb!) NAME NICK"); return }
                if verb == "invite" { try await client.inviteToGroup(rest[0], member: rest[1]) } else { try await client.removeFromGroup(rest[0], member: rest[1]) }
                say("* \(DisplayText.clean(rest[1])) \(verb == "invite" ? "invited to" : "removed from") \(DisplayText.clean(rest[0])): a new key for the group")
            case "say"?, "msg"?:
                guard words.count > 1, let space = words[1].firstIndex(of: " ") else { say("usage: /group say NAME TEXT"); return }
                await groupSay(String(words[1][..<space]), String(words[1][words[1].index(after: space)...]))
            case "history"?:
                guard rest.count == 1 else { say("usage: /group history NAME"); return }
                let g = try GroupChoice.choose(rest[0], among: try await client.groups())
                let messages = try await client.history(MessengerCore.conversationID(forGroup: g.groupID), limit: 200)
                let name = DisplayText.clean(g.name)
                if messages.isEmpty { say("* nothing said in \(name) yet") }
                let f = DateFormatter()
                f.dateFormat = "yyyy-MM-dd HH:mm"
                for m in messages {
                    let when = f.string(from: Date(timeIntervalSince1970: Double(m.timestamp) / 1000))
                    say("  [\(when)] [\(name)] <\(m.outgoing ? "you" : DisplayText.clean(m.author ?? "?"))> \(Self.lines(m.text))")
                }
            case "leave"?:
                guard rest.count == 1 else { say("usage: /group leave NAME"); return }
                try await client.leaveGroup(rest[0])
            default:
                say(usage)
            }
        } catch { say("! \(error)") }
    }

    /// A line to a group: shown as ours in its window (or a line), sealed for its members.
    func groupSay(_ name: String, _ text: String) async {
        do {
            let g = try GroupChoice.choose(name, among: try await client.groups())
            _ = try await client.sendToGroup(g.groupID, text: text)
            let mine = DisplayText.clean(try await client.summary().nickname)
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: mine, text: Self.lines(text), own: true), to: Self.groupWindow(g.name))
            } else {
                say("[\(Self.clock())] [\(DisplayText.clean(g.name))] <\(mine)> \(Self.lines(text))")
            }
        } catch { say("! \(error)") }
    }

    /// A duration in words: "4 s", "0.6 s".
    static func seconds(_ ms: Int) -> String {
        ms >= 10_000 || ms % 1_000 == 0 ? "\(Int((Double(ms) / 1000).rounded())) s" : String(format: "%.1f s", Double(ms) / 1000)
    }

    /// A board time, as "26 Nov 14:05" in local time.
    static func day(_ ms: UInt64) -> String {
        let f = DateFormatter()
        f.dateFormat = "d MMM HH:mm"
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// Accepts or declines an offer told as fileOffered: the one named (a
    /// transfer ID's first digits, or the file's name), else the newest.
    func answerOffer(accept: Bool, _ named: String?) async {
        do {
            let offer = try await client.answerFileOffer(named: named, accept: accept)
            say(accept ? "* taking \(offer.name) (\(Self.bytes(offer.size))) from \(await display(offer.from)): its progress follows"
                       : "* declined \(offer.name) from \(await display(offer.from))")
        } catch let e as MessengerClientError where e.kind == .notFound && e.description.hasPrefix("no file offer") {
            say("* \(e.description)")
        } catch { say("! \(error)") }
    }

    /// A size in words: "40.0 MB".
    static func bytes(_ n: Int) -> String {
        n >= 1_000_000_000 ? String(format: "%.1f GB", Double(n) / 1e9) : n >= 1_000_000 ? String(format: "%.1f MB", Double(n) / 1e6)
            : n >= 1_000 ? String(format: "%.1f kB", Double(n) / 1e3) : "\(n) bytes"
    }
}
