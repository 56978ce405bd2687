"""The plain model chat, offered as a plugin like any other."""
