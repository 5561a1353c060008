// Package outagetest holds the API's tests that take the database away: a
// severed network path and a restart of the test cluster. They live in
// their own test binary because a restart hits every test sharing the
// cluster.
package outagetest
