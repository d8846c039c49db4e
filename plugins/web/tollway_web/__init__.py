"""Tollway plugin `tollway-web`: read a web page as Markdown (`web_read`) and search the web (`web_search`)."""
