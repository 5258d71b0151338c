print("chat-gateway")
