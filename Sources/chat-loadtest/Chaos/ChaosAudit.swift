/// The end-of-run check of the store against what the gateway acknowledged, from every
/// channel's whole history read after the last restart, once every send has its `ok`:
///
/// - each acknowledged (channel, seq, id) is in history exactly once, with the
///   clientMessageId and sender that were sent (else it is *lost*);
/// - each channel's seqs are 1…N: none missing (*gaps*), none twice;
/// - no message id twice, and each clientMessageId at most once per sender (*duplicates*);
/// - nothing is stored that no `ok` named (a send stored twice would show up here or as a duplicate).
struct ChaosAudit {
    var storedTotal = 0
    var duplicateSeqs = 0
    var duplicateMessageIDs = 0
    var duplicateClientMessageIDs = 0
    /// Seqs missing from 1…(the channel's highest seq).
    var gaps = 0
    /// Acknowledged messages not found at their (channel, seq) with their id, clientMessageId and sender.
    var lostAcknowledged = 0
    /// Stored messages that no `ok` named.
    var storedWithoutAck = 0
    /// Pages that went back in seq (history is ascending).
    var outOfOrder = 0
    /// The first few findings, spelled out for the report.
    var examples: [String] = []

    var duplicates: Int { duplicateSeqs + duplicateMessageIDs + duplicateClientMessageIDs }

    var isClean: Bool { duplicates == 0 && gaps == 0 && lostAcknowledged == 0 && storedWithoutAck == 0 && outOfOrder == 0 }

    init(histories: [[ChaosWire.StoredMessage]], acks: [ChaosAck], userIDs: [String], channelIDs: [String]) {
        var bySeq: [[Int64: ChaosWire.StoredMessage]] = Array(repeating: [:], count: channelIDs.count)
        var messageIDs: Set<String> = []
        // (sender, clientMessageId): "at most once per sender" holds across channels too.
        var clientMessageIDs: Set<String> = []
        for (channel, history) in histories.enumerated() {
            var previous: Int64 = 0
            for message in history {
                storedTotal += 1
                if message.seq <= previous {
                    outOfOrder += 1
                    note("\(channelIDs[channel]): seq \(message.seq) after \(previous)")
                }
                previous = message.seq
                if bySeq[channel][message.seq] == nil {
                    bySeq[channel][message.seq] = message
                } else {
                    duplicateSeqs += 1
                    note("\(channelIDs[channel]): seq \(message.seq) twice")
                }
                if !messageIDs.insert(message.id).inserted {
                    duplicateMessageIDs += 1
                    note("message \(message.id) twice")
                }
                let key = "\(message.senderId) \(message.clientMessageId ?? "(none)")"
                if !clientMessageIDs.insert(key).inserted {
                    duplicateClientMessageIDs += 1
                    note("clientMessageId \(message.clientMessageId ?? "(none)") of \(message.senderId) stored twice")
                }
            }
            let highest = bySeq[channel].keys.max() ?? 0
            let missing = Int(highest) - bySeq[channel].keys.filter { $0 >= 1 }.count
            if missing > 0 {
                gaps += missing
                note("\(channelIDs[channel]): \(missing) seqs missing from 1…\(highest)")
            }
        }

        var acknowledged: Set<String> = []
        for ack in acks {
            let sender = userIDs[ack.senderIndex]
            acknowledged.insert("\(sender) \(ack.clientMessageID)")
            let stored = bySeq[ack.channelIndex][ack.seq]
            let found = stored.map {
                $0.id == ack.messageID && $0.clientMessageId == ack.clientMessageID && $0.senderId == sender
            } ?? false
            if !found {
                lostAcknowledged += 1
                note("acknowledged \(ack.clientMessageID) (\(channelIDs[ack.channelIndex]) seq \(ack.seq), \(ack.messageID)) "
                     + (stored.map { "holds \($0.clientMessageId ?? "(none)") / \($0.id)" } ?? "missing"))
            }
        }
        for history in histories {
            for message in history where !acknowledged.contains("\(message.senderId) \(message.clientMessageId ?? "(none)")") {
                storedWithoutAck += 1
                note("stored without an ok: \(message.clientMessageId ?? "(no clientMessageId)") of \(message.senderId), seq \(message.seq)")
            }
        }
    }

    private mutating func note(_ finding: String) {
        if examples.count < 10 { examples.append(finding) }
    }
}
