import WebSocket
