module github.com/motor-whatsapp/motor/sdks/go

go 1.19
