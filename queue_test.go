package boxoffice

import "testing"

// On one sequence the sold-out mark and the count ahead are plain
// arithmetic; on k slots each slot's positions j+1, j+1+k, ... answer to
// that slot's mark and count up to its own last position.
func TestQueueProgressSlots(t *testing.T) {
	one := QueueProgress{Admitted: 10, SoldOutUpTo: 6}
	if !one.SoldOut(6) || one.SoldOut(7) || one.SoldOut(0) || one.AllSoldOut() || one.Before(7) != 6 || one.Before(1) != 0 {
		t.Errorf("one sequence: %+v", one)
	}
	if !(QueueProgress{Admitted: 10, SoldOutUpTo: 10}).AllSoldOut() {
		t.Error("a mark at the last position covers all")
	}
	// Three slots: slot 0 gave 1, 4, 7, 10; slot 1 gave 2, 5; slot 2 gave
	// 3, 6, 9, 12, 15. Slot 0 was marked at 7, slot 2 at 15, slot 1 never.
	p := QueueProgress{Admitted: 11, SoldOutUpTo: 15, Slots: []QueueSlot{{Last: 10, SoldOutUpTo: 7}, {Last: 5}, {Last: 15, SoldOutUpTo: 15}}}
	for pos, want := range map[int64]bool{1: true, 7: true, 10: false, 2: false, 5: false, 12: true, 15: true, 0: false} {
		if p.SoldOut(pos) != want {
			t.Errorf("SoldOut(%d) = %v, want %v", pos, !want, want)
		}
	}
	if p.AllSoldOut() {
		t.Error("slots 0 and 1 have positions past their marks")
	}
	// Below 12: slot 0's 1, 4, 7, 10; slot 1's 2, 5; slot 2's 3, 6, 9.
	if got := p.Before(12); got != 9 {
		t.Errorf("Before(12) = %d, want 9", got)
	}
	if got := p.Before(4); got != 3 {
		t.Errorf("Before(4) = %d, want 3", got)
	}
	// 13 is slot 0's next, past its last: a read from before it was given.
	if got := p.Before(13); got != 12 {
		t.Errorf("Before(13) on an older read = %d, want 12 (as one sequence)", got)
	}
	marked := QueueProgress{Slots: []QueueSlot{{Last: 10, SoldOutUpTo: 10}, {}, {Last: 3, SoldOutUpTo: 3}}}
	if !marked.AllSoldOut() {
		t.Error("every slot marked at its last")
	}
}
