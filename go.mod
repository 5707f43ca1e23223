module github.com/layercast/layercast

go 1.26.8
