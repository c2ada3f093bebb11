package sgmcmc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
)

// Every file of a checkpoint carries a checksum of its content and the
// fingerprint of the fit that wrote it, so that a damaged file (a torn
// copy, a flipped bit on a disk, an edit) is refused at resume by name
// instead of resuming from wrong numbers:
//
//   - the checkpoint itself (Settings.Checkpoint) and FitSettings'
//     Checkpoint+".prep" are JSON with the fingerprint inside, followed by
//     a last line "sha256 " and the SHA-256 of everything before it (seal,
//     unseal);
//   - Checkpoint+".draws" is append-only: a header line holds the SHA-256
//     of the fingerprint and its own CRC-32C, and every record ends with
//     the CRC-32C (Castagnoli) of its bytes (drawFile).

// crcTable is the CRC-32C (Castagnoli) table of the draw file's checksums.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// seal returns body followed by the checksum line.
func seal(body []byte) []byte {
	sum := sha256.Sum256(body)
	b := append(body[:len(body):len(body)], '\n')
	return append(b, checksumPrefix+hex.EncodeToString(sum[:])+"\n"...)
}

// unseal returns the body of a sealed file's content b, or why it is not
// one ("" when it is).
func unseal(b []byte) (body []byte, why string) {
	body, tail, ok := bytes.Cut(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"+checksumPrefix))
	if !ok {
		return nil, "no checksum line: cut short, or not a checkpoint file"
	}
	sum := sha256.Sum256(body)
	if string(tail) != hex.EncodeToString(sum[:]) {
		return nil, "its checksum does not match its content"
	}
	return body, ""
}

// damaged returns the ErrCheckpoint error of a damaged checkpoint file:
// it names the file, why, and the cure (delete the checkpoint's files
// that exist, or use another path). base is the checkpoint path, file
// the damaged one (base, base+".prep" or base+".draws").
func damaged(file, base, why string) error {
	return fmt.Errorf("%w: %s is damaged (%s): %s", ErrCheckpoint, file, why, cure(file, base))
}

// cure tells how to get past a checkpoint that cannot be resumed from:
// delete its files (those that exist, and always file), or use another
// checkpoint path.
func cure(file, base string) string {
	var del []string
	for _, p := range []string{base, base + ".prep", base + ".draws"} {
		if _, err := os.Stat(p); err == nil || p == file {
			del = append(del, p)
		}
	}
	list := del[0]
	if len(del) > 1 {
		list = strings.Join(del[:len(del)-1], ", ") + " and " + del[len(del)-1]
	}
	return fmt.Sprintf("delete %s to start afresh, or use another checkpoint path", list)
}
