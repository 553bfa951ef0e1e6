package boxoffice

// RoleAdmin is the organiser role; any other role is a customer.
const RoleAdmin = "admin"

// User is an authenticated caller.
type User struct {
	ID   string
	Role string
}

// IsAdmin reports whether the user is an organiser.
func (u User) IsAdmin() bool { return u.Role == RoleAdmin }
