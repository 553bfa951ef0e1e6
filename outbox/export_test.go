package outbox

// Backoff is backoff, for the tests of package outbox_test.
var Backoff = backoff
