package kafka

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go/sasl"
)

// SCRAM is a SASL/SCRAM client (RFC 5802, RFC 7677) implementing kafka-go's sasl.Mechanism with
// the standard library only: kafka-go's own sasl/scram pulls in a module rekey does not require.
// User names are escaped as the RFC says (',' and '='); SASLprep normalization is not applied,
// so names and passwords outside ASCII must already be in normalized form.
type SCRAM struct {
	algo     SCRAMAlgorithm
	user     string
	password string
}

// SCRAMAlgorithm is SCRAM-SHA-256 or SCRAM-SHA-512.
type SCRAMAlgorithm struct {
	name string
	hash func() hash.Hash
}

var (
	SCRAMSHA256 = SCRAMAlgorithm{"SCRAM-SHA-256", sha256.New}
	SCRAMSHA512 = SCRAMAlgorithm{"SCRAM-SHA-512", sha512.New}
)

var _ sasl.Mechanism = (*SCRAM)(nil)

// NewSCRAM returns the mechanism for a user.
func NewSCRAM(algo SCRAMAlgorithm, user, password string) (*SCRAM, error) {
	if algo.hash == nil {
		return nil, errors.New("scram: no algorithm")
	}
	if user == "" {
		return nil, errors.New("scram: empty user name")
	}
	return &SCRAM{algo: algo, user: user, password: password}, nil
}

func (s *SCRAM) Name() string { return s.algo.name }

// Start sends the client-first message.
func (s *SCRAM) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, nil, fmt.Errorf("scram: nonce: %w", err)
	}
	cs := &scramSession{m: s, cnonce: base64.RawStdEncoding.EncodeToString(nonce[:])}
	name := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s.user)
	cs.firstBare = "n=" + name + ",r=" + cs.cnonce
	return cs, []byte("n,," + cs.firstBare), nil
}

type scramSession struct {
	m         *SCRAM
	cnonce    string
	firstBare string
	step      int
	serverSig []byte
}

// Next answers the server-first message with the proof, then checks the server's signature.
func (cs *scramSession) Next(ctx context.Context, challenge []byte) (bool, []byte, error) {
	switch cs.step {
	case 0:
		cs.step++
		return cs.final(string(challenge))
	case 1:
		cs.step++
		msg := string(challenge)
		if e, ok := strings.CutPrefix(msg, "e="); ok {
			return false, nil, fmt.Errorf("scram: server refused authentication: %s", e)
		}
		v, ok := strings.CutPrefix(msg, "v=")
		if !ok {
			return false, nil, fmt.Errorf("scram: unexpected server-final message %q", msg)
		}
		if i := strings.IndexByte(v, ','); i >= 0 {
			v = v[:i]
		}
		sig, err := base64.StdEncoding.DecodeString(v)
		if err != nil || subtle.ConstantTimeCompare(sig, cs.serverSig) != 1 {
			return false, nil, errors.New("scram: the server's signature does not match: wrong server or credentials")
		}
		return true, nil, nil
	}
	return false, nil, errors.New("scram: unexpected extra challenge")
}

func (cs *scramSession) final(serverFirst string) (bool, []byte, error) {
	var nonce, salt64 string
	iter := 0
	for _, attr := range strings.Split(serverFirst, ",") {
		k, v, ok := strings.Cut(attr, "=")
		if !ok {
			continue
		}
		switch k {
		case "r":
			nonce = v
		case "s":
			salt64 = v
		case "i":
			iter, _ = strconv.Atoi(v)
		case "e":
			return false, nil, fmt.Errorf("scram: server refused authentication: %s", v)
		case "m":
			return false, nil, errors.New("scram: the server requires an unsupported extension")
		}
	}
	if !strings.HasPrefix(nonce, cs.cnonce) || len(nonce) == len(cs.cnonce) {
		return false, nil, errors.New("scram: the server's nonce does not extend ours")
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil || len(salt) == 0 {
		return false, nil, errors.New("scram: bad salt from the server")
	}
	if iter < 1 || iter > 1<<20 {
		return false, nil, fmt.Errorf("scram: bad iteration count %d from the server", iter)
	}
	h := cs.m.algo.hash
	salted, err := pbkdf2.Key(h, cs.m.password, salt, iter, h().Size())
	if err != nil {
		return false, nil, fmt.Errorf("scram: %w", err)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	hh := h()
	hh.Write(clientKey)
	storedKey := hh.Sum(nil)
	withoutProof := "c=biws,r=" + nonce // biws = base64("n,,")
	authMsg := cs.firstBare + "," + serverFirst + "," + withoutProof
	sig := mac(storedKey, authMsg)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	cs.serverSig = mac(mac(salted, "Server Key"), authMsg)
	return false, []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}
