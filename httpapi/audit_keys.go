package httpapi

import (
	"context"
	"time"

	"github.com/holdfast/holdfast"
)

// KeyAudit is the audit record of an API key's change (action
// holdfast.AuditKeyCreate, AuditKeyRevoke or AuditKeyRotate) by ctx's
// actor: the stores write it in the change's transaction. rec is the key
// created (the new key of a rotation); oldID the key revoked or rotated;
// shop the key's shop (0: an admin key). The key itself, or its hash, is
// never in it.
func KeyAudit(ctx context.Context, action string, shop int64, rec *APIKey, oldID int64, grace time.Duration) holdfast.AuditRecord {
	d := map[string]any{}
	if rec != nil {
		d["key_id"] = rec.ID
		d["name"] = rec.Name
		d["admin"] = rec.Admin
		d["scopes"] = ScopeStrings(rec.Scopes)
		if rec.ExpiresAt != nil {
			d["expires_at"] = rec.ExpiresAt.UTC()
		}
	}
	switch action {
	case holdfast.AuditKeyRevoke:
		d["key_id"] = oldID
	case holdfast.AuditKeyRotate:
		d["old_key_id"] = oldID
		d["grace_seconds"] = grace.Seconds()
	}
	return holdfast.NewAuditRecord(ctx, shop, action, d)
}

// KeyShop is the shop of a key's audit entries: 0 for an admin key.
func KeyShop(rec *APIKey) int64 {
	if rec.Admin {
		return 0
	}
	return rec.ShopID
}
