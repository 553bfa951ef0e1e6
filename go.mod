module github.com/boxoffice/boxoffice

go 1.26.8
