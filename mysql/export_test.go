package mysql

// CombinedGrants is how many reservations c's combined batches granted.
func CombinedGrants(c *Client) int64 { return c.combinedGrants.Load() }
