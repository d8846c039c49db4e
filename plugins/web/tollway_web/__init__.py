"""Tollway plugin `tollway-web`: read a web page as Markdown (`web_read`)."""
