"""The server's routes, one router per area; ``create_app`` includes them all."""
