package boxoffice

// Roles. RoleAdmin is the organiser; RoleStaff works the venue's doors
// (check-in); any other role is a customer.
const (
	RoleAdmin = "admin"
	RoleStaff = "staff"
)

// User is an authenticated caller.
type User struct {
	ID   string
	Role string
}

// IsAdmin reports whether the user is an organiser.
func (u User) IsAdmin() bool { return u.Role == RoleAdmin }

// CanCheckIn reports whether the user may admit tickets at the venue.
func (u User) CanCheckIn() bool { return u.Role == RoleAdmin || u.Role == RoleStaff }
