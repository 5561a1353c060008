package webhook

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SecretKeySize is the size of Options.SecretKey: AES-256.
const SecretKeySize = 32

// ErrSecretKey: an endpoint's stored secret is encrypted and the key given
// (Options.SecretKey) is missing or another one: that endpoint cannot be
// signed for until the deployment's key is configured.
var ErrSecretKey = errors.New("webhook: the endpoint's secret is encrypted with another key (or none is configured)")

// sealedPrefix marks a stored secret encrypted with the server key:
// "enc1:" + base64(nonce ‖ AES-GCM(secret bytes)), the shop id as the
// additional data, so a sealed secret copied to another shop's row does
// not open. 85 characters: it fits MySQL's VARCHAR(100).
const sealedPrefix = "enc1:"

func secretAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != SecretKeySize {
		return nil, fmt.Errorf("webhook: the secret key must be %d bytes, got %d", SecretKeySize, len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func shopAD(shop int64) []byte {
	return []byte("holdfast-webhook-secret:" + strconv.FormatInt(shop, 10))
}

// sealSecret is what is stored for a new secret (raw its 32 random bytes,
// secret its "whsec_<hex>" form): sealed with key, or secret itself when
// there is no key.
func sealSecret(key []byte, shop int64, raw []byte, secret string) (string, error) {
	if key == nil {
		return secret, nil
	}
	aead, err := secretAEAD(key)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, raw, shopAD(shop))), nil
}

// openSecret is the secret a stored value holds: opened with key when
// sealed; a plaintext one (stored without a key) as it is.
func openSecret(key []byte, shop int64, stored string) (string, error) {
	enc, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return stored, nil
	}
	if key == nil {
		return "", ErrSecretKey
	}
	aead, err := secretAEAD(key)
	if err != nil {
		return "", err
	}
	b, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil || len(b) < aead.NonceSize() {
		return "", ErrSecretKey
	}
	raw, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], shopAD(shop))
	if err != nil {
		return "", ErrSecretKey
	}
	return "whsec_" + hex.EncodeToString(raw), nil
}
