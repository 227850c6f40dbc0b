// Package faults is hookverify's fault-injection suite: its tests run the real hookverify binary
// as separate processes and kill them, stop their database, run several of them on one
// database and feed them hostile input, then check that nothing accepted was lost or doubled.
// RELIABILITY.md at the repository root maps each guarantee to the test that backs it.
package faults
